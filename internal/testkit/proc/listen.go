package proc

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// listening says whether pid holds a listening socket on each port: a
// dial alone cannot tell our server from another process that took its
// port first (Linux's /proc: the socket's inode in /proc/net/tcp*, among
// the process's open files).
func listening(pid int, ports []int) (bool, error) {
	inodes := map[int][]string{} // port -> inodes of the sockets listening on it
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if err := listeners(file, inodes); err != nil {
			return false, err
		}
	}
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	held := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(dir, fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			held[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	for _, port := range ports {
		ours := false
		for _, ino := range inodes[port] {
			ours = ours || held[ino]
		}
		if !ours {
			return false, nil
		}
	}
	return true, nil
}

// listeners adds the inodes of the listening sockets of one /proc/net
// table, by port.
func listeners(file string, inodes map[int][]string) error {
	f, err := os.Open(file)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[3] != "0A" { // 0A: LISTEN
			continue
		}
		_, hexPort, _ := strings.Cut(fields[1], ":")
		if port, err := strconv.ParseInt(hexPort, 16, 32); err == nil {
			inodes[int(port)] = append(inodes[int(port)], fields[9])
		}
	}
	return sc.Err()
}
