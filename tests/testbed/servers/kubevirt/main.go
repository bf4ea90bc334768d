// Test server only: prints, as one JSON List, the resources KubeVirt's
// virt-operator installs for the components the lab runs: every KubeVirt
// CustomResourceDefinition and the service accounts, roles and bindings of
// virt-controller and virt-handler. The lab thus runs KubeVirt's own schemas
// and identities without running virt-operator.
//
// usage: kubevirt-install [NAMESPACE]   (default kubevirt)
package main

import (
	"encoding/json"
	"fmt"
	"os"

	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"kubevirt.io/kubevirt/pkg/virt-operator/resource/generate/components"
	"kubevirt.io/kubevirt/pkg/virt-operator/resource/generate/rbac"
)

// The CRDs in the order virt-operator's install strategy lists them.
var crds = []func() (*extv1.CustomResourceDefinition, error){
	components.NewVirtualMachineInstanceCrd, components.NewPresetCrd, components.NewReplicaSetCrd,
	components.NewVirtualMachineCrd, components.NewVirtualMachineInstanceMigrationCrd,
	components.NewVirtualMachineSnapshotCrd, components.NewVirtualMachineSnapshotContentCrd,
	components.NewVirtualMachineRestoreCrd, components.NewVirtualMachineInstancetypeCrd,
	components.NewVirtualMachineClusterInstancetypeCrd, components.NewVirtualMachinePoolCrd,
	components.NewMigrationPolicyCrd, components.NewVirtualMachinePreferenceCrd,
	components.NewVirtualMachineClusterPreferenceCrd, components.NewVirtualMachineExportCrd,
	components.NewVirtualMachineCloneCrd, components.NewVirtualMachineBackupCrd,
	components.NewVirtualMachineBackupTrackerCrd, components.NewKubeVirtCrd,
}

func main() {
	namespace := "kubevirt"
	if len(os.Args) > 1 {
		namespace = os.Args[1]
	}
	items := []interface{}{}
	for _, build := range crds {
		crd, err := build()
		if err != nil {
			fmt.Fprintln(os.Stderr, "kubevirt-install:", err)
			os.Exit(1)
		}
		items = append(items, crd)
	}
	// No NetworkAttachmentDefinition rules for virt-controller: the lab has no Multus.
	for _, objects := range [][]runtime.Object{
		rbac.GetAllCluster(), rbac.GetAllController(namespace, false), rbac.GetAllHandler(namespace),
	} {
		for _, object := range objects {
			items = append(items, object)
		}
	}
	list := map[string]interface{}{"apiVersion": "v1", "kind": "List", "items": items}
	if err := json.NewEncoder(os.Stdout).Encode(list); err != nil {
		fmt.Fprintln(os.Stderr, "kubevirt-install:", err)
		os.Exit(1)
	}
}
