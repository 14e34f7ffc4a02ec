//go:build linux && !race

package realolm

const raceEnabled = false
