// Where a kernel matrix guest that hangs is stuck: QEMU's monitor reports
// each virtual CPU's instruction pointer. A guest whose CPUs spin in one
// kernel function is told apart from one that idles with its userland
// blocked.
package integration

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"
)

var (
	monitorCPU = regexp.MustCompile(`^CPU#([0-9]+)`)
	monitorRIP = regexp.MustCompile(`RIP=([0-9a-f]{16})`)
	monitorHLT = regexp.MustCompile(`HLT=1`)
)

var guestText = regexp.MustCompile(`guest: kernel text at ([0-9a-f]{16})`)

// where names an instruction pointer as an offset from the kernel's
// _text, which guest.sh prints (KASLR moves it): the same offset names
// the function in that kernel release's System.map (Debian ships it in
// the -dbg package only, too big to fetch for every run).
func where(ip, text uint64) string {
	switch {
	case ip < 1<<63:
		return "user space"
	case text == 0:
		return "kernel"
	case ip < text:
		return "kernel, below _text"
	}
	return fmt.Sprintf("_text+0x%x", ip-text)
}

// guestCPUs reads every CPU's instruction pointer from the monitor at
// sock five times, a second apart, and returns one line per reading.
func guestCPUs(sock, console string) string {
	var text uint64
	if m := guestText.FindStringSubmatch(console); m != nil {
		text, _ = strconv.ParseUint(m[1], 16, 64)
	}
	c, err := net.DialTimeout("unix", sock, 2*time.Second)
	if err != nil {
		return "QEMU monitor: " + err.Error()
	}
	defer c.Close()
	var out strings.Builder
	buf := make([]byte, 64<<10)
	for round := 0; round < 5; round++ {
		_ = c.SetWriteDeadline(time.Now().Add(2 * time.Second))
		if _, err := fmt.Fprintf(c, "info registers -a\n"); err != nil {
			return out.String() + "QEMU monitor: " + err.Error()
		}
		// The monitor's answer has no end marker that survives its line
		// editor: whatever arrives within a second is the answer.
		var reply strings.Builder
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		for {
			n, err := c.Read(buf)
			reply.Write(buf[:n])
			if err != nil {
				break
			}
		}
		fmt.Fprintf(&out, "reading %d:", round+1)
		cpu, ip := "?", ""
		for _, line := range strings.Split(reply.String(), "\n") {
			if m := monitorCPU.FindStringSubmatch(line); m != nil {
				cpu = m[1]
			}
			if m := monitorRIP.FindStringSubmatch(line); m != nil {
				ip = m[1]
			}
			// HLT comes after RIP in each CPU's dump: an idle CPU.
			if strings.Contains(line, "HLT=") && ip != "" {
				v, _ := strconv.ParseUint(ip, 16, 64)
				state := "running"
				if monitorHLT.MatchString(line) {
					state = "halted"
				}
				fmt.Fprintf(&out, " cpu%s %s (%s, %s)", cpu, ip, where(v, text), state)
				ip = ""
			}
		}
		out.WriteString("\n")
	}
	return out.String()
}
