// Command spinner is the lab node's only workload, packed into its container
// images: "spin N" burns N threads (the vCPUs of a VM stand-in), "pause"
// sleeps (the pod sandbox). Both exit on SIGTERM or SIGINT.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
)

func spin() {
	for {
	}
}

func main() {
	mode := "pause"
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	switch mode {
	case "spin":
		threads := 1
		if len(os.Args) > 2 {
			n, err := strconv.Atoi(os.Args[2])
			if err != nil || n < 1 {
				fmt.Fprintf(os.Stderr, "spinner: threads must be a positive integer, not %q\n", os.Args[2])
				os.Exit(2)
			}
			threads = n
		}
		// Fixed: Go would otherwise shrink its threads to a CPU limit as it changes.
		runtime.GOMAXPROCS(threads)
		for i := 0; i < threads; i++ {
			go spin()
		}
	case "pause":
	default:
		fmt.Fprintf(os.Stderr, "spinner: unknown mode %q (spin N, pause)\n", mode)
		os.Exit(2)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}
