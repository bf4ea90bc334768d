// Command etcd is the upstream etcd server entry point, wrapped so it builds
// from Go modules for the project's local lab.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
