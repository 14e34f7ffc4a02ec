//go:build race

package manager

// raceEnabled mirrors the test binary's -race into the manager build, so both share the build cache
// (and the manager process runs under the race detector too).
const raceEnabled = true
