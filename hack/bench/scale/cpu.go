package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of utime/stime in /proc/<pid>/stat (100 on Linux).
const clockTicks = 100

// cpuSeconds reads the CPU time (user + system) of this process and of its child processes
// (kube-apiserver, etcd, the vCenter simulator), by command name; empty where /proc is not readable.
func cpuSeconds() map[string]float64 {
	out := map[string]float64{}
	self := os.Getpid()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		pid, _ := strconv.Atoi(filepath.Base(dir))
		raw, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... utime(14) stime(15): comm may hold spaces, so split after ')'.
		s := string(raw)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(s[end+1:])
		if len(fields) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		if pid != self && ppid != self {
			continue
		}
		name := s[open+1 : end]
		if pid == self {
			name = "bench (operator, world, sampler)"
		}
		utime, _ := strconv.ParseFloat(fields[11], 64)
		stime, _ := strconv.ParseFloat(fields[12], 64)
		out[name] += (utime + stime) / clockTicks
	}
	return out
}

// cpuUsed is the CPU each process used between two readings, most first.
func cpuUsed(before, after map[string]float64) []string {
	type used struct {
		name string
		s    float64
	}
	var all []used
	var total float64
	for name, s := range after {
		all = append(all, used{name, s - before[name]})
		total += s - before[name]
	}
	sort.Slice(all, func(i, j int) bool { return all[i].s > all[j].s })
	var lines []string
	for _, u := range all {
		lines = append(lines, fmt.Sprintf("%8.1f s CPU  %4.0f %%  %s", u.s, 100*u.s/max(total, 1e-9), u.name))
	}
	return lines
}
