// Package memorytest finds what a controller remembers, for the tests that every per-pool record is
// registered with the poolmemory Registry: a new field holding a map, registered nowhere and listed
// nowhere, fails them.
package memorytest

import (
	"reflect"
	"sync"
)

var syncMap = reflect.TypeOf(sync.Map{})

// Holders lists the fields of the struct v points to (one level into embedded structs, whose fields are
// named as promoted, and into fields named in open, as "Opts.DestroyedHosts") whose type holds a map or a sync.Map anywhere within it,
// through pointers, slices, arrays and nested structs. Interfaces and functions are not looked into:
// what they hold is the injected implementation's business.
func Holders(v any, open ...string) []string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		opened := f.Anonymous && f.Type.Kind() == reflect.Struct
		for _, o := range open {
			opened = opened || o == f.Name
		}
		if opened {
			prefix := f.Name + "."
			if f.Anonymous {
				prefix = "" // promoted: the code names Opts.Clock, not Opts.Services.Clock
			}
			for _, sub := range Holders(reflect.New(f.Type).Interface()) {
				out = append(out, prefix+sub)
			}
			continue
		}
		if holdsMap(f.Type, map[reflect.Type]bool{}) {
			out = append(out, f.Name)
		}
	}
	return out
}

func holdsMap(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	if t == syncMap {
		return true
	}
	switch t.Kind() {
	case reflect.Map:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return holdsMap(t.Elem(), seen)
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if holdsMap(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}
