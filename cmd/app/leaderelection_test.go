package app

import (
	"testing"
	"time"
)

func TestLeaderElectionTimings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      LeaderElectionTimings
		want    LeaderElectionTimings
		wantErr bool
	}{
		{name: "zero takes OpenShift's", want: LeaderElectionTimings{137 * time.Second, 107 * time.Second, 26 * time.Second}},
		{name: "one field set keeps the other defaults", in: LeaderElectionTimings{LeaseDuration: 200 * time.Second},
			want: LeaderElectionTimings{200 * time.Second, 107 * time.Second, 26 * time.Second}},
		{name: "controller-runtime's", in: LeaderElectionTimings{15 * time.Second, 10 * time.Second, 2 * time.Second},
			want: LeaderElectionTimings{15 * time.Second, 10 * time.Second, 2 * time.Second}},
		{name: "lease not longer than the renew deadline", in: LeaderElectionTimings{LeaseDuration: 107 * time.Second}, wantErr: true},
		{name: "renew deadline within 1.2 retry periods", in: LeaderElectionTimings{RenewDeadline: 30 * time.Second, RetryPeriod: 26 * time.Second}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.in.Validate()
			if (err != nil) != tc.wantErr {
				t.Fatalf("Validate() = %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && tc.in.withDefaults() != tc.want {
				t.Errorf("withDefaults() = %+v, want %+v", tc.in.withDefaults(), tc.want)
			}
		})
	}
}
