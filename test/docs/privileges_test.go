package docs

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// The conditions of the doc's "When" column, each as the RequiredPrivileges arguments that turn it on.
var conditions = map[string]func(*vsphere.PrivilegeSpec, *bool){
	"always": func(*vsphere.PrivilegeSpec, *bool) {},
	"only while the VM folder does not exist":           func(_ *vsphere.PrivilegeSpec, createFolder *bool) { *createFolder = true },
	"only with `spec.iso.ejectAfterInstall`":            func(s *vsphere.PrivilegeSpec, _ *bool) { s.EjectAfterInstall = true },
	"only with `spec.vsphere.vmTags`":                   func(s *vsphere.PrivilegeSpec, _ *bool) { s.Tags = []string{"zone-a"} },
	"only with `spec.iso.recoverDiscoveryBoot`":         func(s *vsphere.PrivilegeSpec, _ *bool) { s.RecoverDiscoveryBoot = true },
	"only with `spec.template.hardware.pciDevices`":     func(s *vsphere.PrivilegeSpec, _ *bool) { s.PCIDevices = true },
	"only with `spec.antiAffinity.mode: ClusterModule`": func(s *vsphere.PrivilegeSpec, _ *bool) { s.AntiAffinity = true },
}

var backticked = regexp.MustCompile("`([^`]+)`")

// privilegeIDs are the backticked privilege IDs of a cell (anything with a dot and no spec. prefix).
func privilegeIDs(cell string) []string {
	var out []string
	for _, m := range backticked.FindAllStringSubmatch(cell, -1) {
		if strings.Contains(m[1], ".") && !strings.HasPrefix(m[1], "spec.") && !strings.Contains(m[1], " ") {
			out = append(out, m[1])
		}
	}
	return out
}

// section returns the lines of the markdown section starting at heading up to the next heading of the
// same or a higher level.
func section(t *testing.T, doc, heading string) []string {
	t.Helper()
	lines := strings.Split(doc, "\n")
	start := slices.Index(lines, heading)
	if start < 0 {
		t.Fatalf("docs/vcenter-privileges.md has no %q", heading)
	}
	level := strings.Index(heading, " ")
	end := len(lines)
	for i := start + 1; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "#") {
			if l := strings.Index(lines[i], " "); l > 0 && l <= level {
				end = i
				break
			}
		}
	}
	return lines[start+1 : end]
}

// tableRows returns the cells of a section's table body rows.
func tableRows(lines []string) [][]string {
	var rows [][]string
	for _, l := range lines {
		if !strings.HasPrefix(l, "|") || strings.HasPrefix(l, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows = append(rows, cells)
	}
	if len(rows) > 0 {
		rows = rows[1:] // header
	}
	return rows
}

func readDoc(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(root + "/docs/vcenter-privileges.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// key is one (kind, condition) cell of the checked list.
type key struct{ kind, when string }

// productChecks is what vsphere.RequiredPrivileges asks for, per kind, split by the condition that adds it.
func productChecks() map[key][]string {
	base := vsphere.RequiredPrivileges(vsphere.PrivilegeSpec{}, false)
	out := map[key][]string{}
	for when, turnOn := range conditions {
		spec, createFolder := vsphere.PrivilegeSpec{}, false
		turnOn(&spec, &createFolder)
		for kind, privs := range vsphere.RequiredPrivileges(spec, createFolder) {
			for _, p := range privs {
				if when == "always" || !slices.Contains(base[kind], p) {
					out[key{kind, when}] = append(out[key{kind, when}], p)
				}
			}
		}
	}
	return out
}

// The table "What the preflight checks" lists exactly what RequiredPrivileges asks for, per object kind
// and condition, in its order.
func TestPrivilegesDocMatchesPreflight(t *testing.T) {
	doc := readDoc(t)
	documented := map[key][]string{}
	for _, cells := range tableRows(section(t, doc, "## What the preflight checks")) {
		if len(cells) != 4 {
			t.Fatalf("row %v: want 4 cells (Object, Kind, Privilege IDs, When)", cells)
		}
		kinds := privilegeKinds(cells[1])
		if len(kinds) != 1 {
			t.Fatalf("row %v: want one backticked kind", cells)
		}
		if _, ok := conditions[cells[3]]; !ok {
			t.Fatalf("row %v: unknown condition %q (known: %v)", cells, cells[3], conditionNames())
		}
		k := key{kinds[0], cells[3]}
		documented[k] = append(documented[k], privilegeIDs(cells[2])...)
	}
	want := productChecks()
	for k, privs := range want {
		if !slices.Equal(documented[k], privs) {
			t.Errorf("%s (%s): the doc lists %v, the preflight checks %v", k.kind, k.when, documented[k], privs)
		}
	}
	for k, privs := range documented {
		if _, ok := want[k]; !ok {
			t.Errorf("%s (%s): the doc lists %v, the preflight checks nothing there", k.kind, k.when, privs)
		}
	}
}

// Every privilege of the role is either checked by the preflight or listed under "Not checked by the
// preflight", never both, and the role names every checked privilege.
func TestPrivilegesDocRoleCoversChecks(t *testing.T) {
	doc := readDoc(t)
	var role []string
	for _, cells := range tableRows(section(t, doc, "## The role")) {
		if len(cells) != 3 {
			t.Fatalf("role row %v: want 3 cells", cells)
		}
		for _, id := range privilegeIDs(cells[1]) {
			if !strings.HasPrefix(id, "System.") {
				role = append(role, id)
			}
		}
	}
	var notChecked []string
	for _, l := range section(t, doc, "### Not checked by the preflight") {
		if strings.HasPrefix(l, "- ") {
			if ids := privilegeIDs(l); len(ids) > 0 {
				notChecked = append(notChecked, ids[0])
			}
		}
	}
	checked := map[string]bool{}
	for _, privs := range productChecks() {
		for _, p := range privs {
			checked[p] = true
		}
	}
	for p := range checked {
		if !slices.Contains(role, p) {
			t.Errorf("the preflight checks %s but the role table does not list it", p)
		}
	}
	for _, p := range notChecked {
		if checked[p] {
			t.Errorf("%s is listed as not checked, but the preflight checks it", p)
		}
	}
	for _, p := range role {
		if !checked[p] && !slices.Contains(notChecked, p) {
			t.Errorf("the role lists %s, which the preflight does not check and the doc does not list as not checked", p)
		}
	}
	if len(role) == 0 || len(notChecked) == 0 {
		t.Fatalf("parsed nothing: role %v, not checked %v", role, notChecked)
	}
}

// privilegeKinds are the backticked names in a Kind cell.
func privilegeKinds(cell string) []string {
	var out []string
	for _, m := range backticked.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

func conditionNames() []string {
	var out []string
	for c := range conditions {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}
