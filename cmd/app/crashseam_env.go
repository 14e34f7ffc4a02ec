package app

// CrashPointSocketEnv names a unix socket of a crash campaign (test/chaos, CHAOS_MODE=sigkill). In a
// manager built with the tag crashpoints (crashseam.go), the manager announces every crash point
// (internal/crashpoint) there and waits for the campaign's answer, so the campaign can SIGKILL the real
// process exactly at that point. The shipped build (crashseam_off.go) never reads it: the name is not
// even in its binary.
const CrashPointSocketEnv = "AGENT_FORGE_CRASHPOINT_SOCKET"
