package main

import "testing"

func TestConfigFromEnvReadsDemoStandby(t *testing.T) {
	for _, tc := range []struct {
		env     string
		want    int
		wantErr bool
	}{
		{env: "", want: 0},
		{env: "0", want: 0},
		{env: "2", want: 2},
		{env: "20", want: 20},
		{env: "21", wantErr: true},
		{env: "-1", wantErr: true},
		{env: "two", wantErr: true},
	} {
		t.Setenv("DEMO_STANDBY", tc.env)
		c, err := configFromEnv()
		if (err != nil) != tc.wantErr {
			t.Errorf("DEMO_STANDBY=%q: error %v, want error %t", tc.env, err, tc.wantErr)
			continue
		}
		if err == nil && c.standby != tc.want {
			t.Errorf("DEMO_STANDBY=%q: standby %d, want %d", tc.env, c.standby, tc.want)
		}
	}
}
