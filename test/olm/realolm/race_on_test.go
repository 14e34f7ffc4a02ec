//go:build linux && race

package realolm

// raceEnabled mirrors the test binary's -race into the manager build, so both share the build cache.
const raceEnabled = true
