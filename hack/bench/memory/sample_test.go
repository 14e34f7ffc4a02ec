package main

import (
	"strings"
	"testing"
)

func TestProcStatus(t *testing.T) {
	status := "Name:\tmanager\nVmPeak:\t 1999000 kB\nVmHWM:\t  120000 kB\nVmRSS:\t   90000 kB\nRssAnon:\t   61000 kB\nRssFile:\t   29000 kB\n"
	rss, hwm, anon := procStatus(strings.NewReader(status))
	if rss != 90000<<10 || hwm != 120000<<10 || anon != 61000<<10 {
		t.Fatalf("procStatus = %d, %d, %d; want VmRSS 90000 kB, VmHWM 120000 kB, RssAnon 61000 kB in bytes", rss, hwm, anon)
	}
}

func TestGauges(t *testing.T) {
	text := `# HELP go_memstats_heap_inuse_bytes Number of bytes in in-use spans.
# TYPE go_memstats_heap_inuse_bytes gauge
go_memstats_heap_inuse_bytes 2.4576e+07
go_memstats_heap_alloc_bytes 2.1e+07
go_memstats_heap_alloc_bytes_total{x="y"} 5
`
	got := gauges(strings.NewReader(text), "go_memstats_heap_inuse_bytes", "go_memstats_heap_alloc_bytes")
	if got["go_memstats_heap_inuse_bytes"] != 24576000 || got["go_memstats_heap_alloc_bytes"] != 21e6 || len(got) != 2 {
		t.Fatalf("gauges = %v", got)
	}
}
