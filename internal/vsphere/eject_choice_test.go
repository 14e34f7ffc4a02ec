package vsphere_test

import (
	"strings"
	"testing"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

func TestChooseLockAnswer(t *testing.T) {
	lock := func(choices ...vsphere.Choice) *vsphere.Question {
		return &vsphere.Question{ID: "_vmx1", MessageID: vsphere.CDROMLockedMessageID, Choices: choices}
	}
	yes := vsphere.Choice{Key: "0", Label: "button.yes", Summary: "Yes"}
	no := vsphere.Choice{Key: "1", Label: "button.no", Summary: "No"}
	for _, tc := range []struct {
		name    string
		q       *vsphere.Question
		want    string
		refused string // substring of the refusal
	}{
		{name: "real vCenter shape", q: lock(yes, no), want: "0"},
		{name: "reversed order", q: lock(vsphere.Choice{Key: "0", Label: "button.no", Summary: "No"},
			vsphere.Choice{Key: "1", Label: "button.yes", Summary: "Yes"}), want: "1"},
		{name: "localized summary, button.yes label", q: lock(vsphere.Choice{Key: "0", Label: "button.no", Summary: "Nein"},
			vsphere.Choice{Key: "1", Label: "BUTTON.YES", Summary: "Ja"}), want: "1"},
		{name: "summary only (no message key)", q: lock(vsphere.Choice{Key: "0", Summary: "No"},
			vsphere.Choice{Key: "1", Summary: " yes "}), want: "1"},
		{name: "label-only Yes", q: lock(vsphere.Choice{Key: "0", Label: "No"}, vsphere.Choice{Key: "1", Label: "Yes"}), want: "1"},
		{name: "button.yes wins over a summary Yes elsewhere", q: lock(vsphere.Choice{Key: "0", Label: "button.other", Summary: "Yes"},
			vsphere.Choice{Key: "1", Label: "button.yes", Summary: "Oui"}), want: "1"},
		{name: "no Yes choice: No, Cancel, OK are never picked", q: lock(vsphere.Choice{Key: "0", Label: "button.no", Summary: "No"},
			vsphere.Choice{Key: "1", Label: "button.cancel", Summary: "Cancel"}, vsphere.Choice{Key: "2", Label: "button.ok", Summary: "OK"}),
			refused: "offered: 0=button.no/No, 1=button.cancel/Cancel, 2=button.ok/OK"},
		{name: "no choices", q: lock(), refused: "offered: none"},
		{name: "unrelated message with a Yes choice", q: &vsphere.Question{ID: "_vmx2", MessageID: "msg.hbacommon.outofspace",
			Choices: []vsphere.Choice{yes, no}}, refused: "not the CD-ROM lock question"},
		{name: "no question", q: nil, refused: "no question"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := vsphere.ChooseLockAnswer(tc.q)
			if tc.refused != "" {
				if err == nil || vsphere.ClassOf(err) != vsphere.ClassRefused || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("ChooseLockAnswer = %q, %v; want a refusal containing %q", got, err, tc.refused)
				}
				if !vsphere.IsAnswerError(err) {
					t.Fatalf("refusal %v is not attributed to the answer operation", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ChooseLockAnswer = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
