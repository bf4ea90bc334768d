// Command vcsim serves govmomi's vSphere simulator on loopback for the
// project's lab: a vCenter (VPX) model with one datacenter, a cluster of ESXi
// hosts and a few VMs, behind HTTPS with a fixed user and password.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"github.com/vmware/govmomi/simulator"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:18989", "address to listen on")
	username := flag.String("username", "user", "login user name")
	password := flag.String("password", "pass", "login password")
	clusters := flag.Int("cluster", 1, "clusters per datacenter")
	hostsPerCluster := flag.Int("cluster-host", 3, "ESXi hosts per cluster")
	standaloneHosts := flag.Int("host", 0, "standalone ESXi hosts per datacenter")
	machines := flag.Int("vm", 4, "virtual machines per resource pool")
	flag.Parse()

	model := simulator.VPX()
	model.Datacenter = 1
	model.Cluster = *clusters
	model.ClusterHost = *hostsPerCluster
	model.Host = *standaloneHosts
	model.Machine = *machines
	model.Autostart = true
	if err := model.Create(); err != nil {
		log.Fatalf("create model: %v", err)
	}
	model.Service.TLS = new(tls.Config)
	model.Service.Listen = &url.URL{Host: *listen, User: url.UserPassword(*username, *password)}
	server := model.Service.NewServer()
	fmt.Printf("vcsim listening on %s\n", server.URL.Host)

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
	server.Close()
	model.Remove()
}
