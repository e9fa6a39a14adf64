// Writes N records of 8 bytes to OUT through os.File.Write, one write(2)
// each: the code location of every write is this file's f.Write line
// (marked GOWRITE), not Go's runtime or its os and syscall packages.
package main

import (
	"fmt"
	"os"
	"strconv"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: gowrite OUT N")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "gowrite:", err)
		os.Exit(2)
	}
	f, err := os.Create(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "gowrite:", err)
		os.Exit(1)
	}
	rec := []byte("record.\n")
	for i := 0; i < n; i++ {
		if _, err := f.Write(rec); err != nil { // GOWRITE
			fmt.Fprintln(os.Stderr, "gowrite:", err)
			os.Exit(1)
		}
	}
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "gowrite:", err)
		os.Exit(1)
	}
}
