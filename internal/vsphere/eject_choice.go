package vsphere

import (
	"fmt"
	"strings"
)

// yesLabel is the message key vCenter puts in ElementDescription.label of the "Yes" choice; the
// display text ("Yes", or a localized word) is in summary.
const yesLabel = "button.yes"

// ChooseLockAnswer returns the key of the "Yes" choice of the CD-ROM lock question
// (msg.cdromdisconnect.locked), or an error classified Refused.
//
// The choice is picked by meaning, never by position or default index: first the choice whose label is
// the message key button.yes (case-insensitive), else the one whose summary is "Yes" (trimmed,
// case-insensitive), else one whose label is the plain word "Yes". A "No", "Cancel" or "OK" choice is
// never picked; a question with another message is never answered at all.
func ChooseLockAnswer(q *Question) (string, error) {
	if q == nil {
		return "", NewError(ClassRefused, OpAnswer, "no question is pending")
	}
	if q.MessageID != CDROMLockedMessageID {
		return "", NewError(ClassRefused, OpAnswer, "question %s is %q, not the CD-ROM lock question %s: not answering it",
			q.ID, q.MessageID, CDROMLockedMessageID)
	}
	for _, match := range []func(Choice) bool{
		func(c Choice) bool { return strings.EqualFold(strings.TrimSpace(c.Label), yesLabel) },
		func(c Choice) bool { return strings.EqualFold(strings.TrimSpace(c.Summary), "yes") },
		func(c Choice) bool { return strings.EqualFold(strings.TrimSpace(c.Label), "yes") },
	} {
		for _, c := range q.Choices {
			if match(c) && c.Key != "" {
				return c.Key, nil
			}
		}
	}
	return "", NewError(ClassRefused, OpAnswer, "question %s offers no \"Yes\" choice (offered: %s): not answering it",
		q.ID, describeChoices(q.Choices))
}

// describeChoices renders choices as key=label/summary for messages.
func describeChoices(choices []Choice) string {
	if len(choices) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(choices))
	for _, c := range choices {
		parts = append(parts, fmt.Sprintf("%s=%s/%s", c.Key, c.Label, c.Summary))
	}
	return strings.Join(parts, ", ")
}
