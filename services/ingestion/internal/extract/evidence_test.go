package extract

import (
	"testing"

	"github.com/trustlayer/trustlayer/services/ingestion/internal/normalize"
)

func TestVerifyEvidence(t *testing.T) {
	t.Parallel()
	prev := textDoc(t, "POLICY\n\nCOVERED\n\nSeat lift mechanisms are covered.\n\nCODES\n\nCPT 70551 MRI brain.\n")
	cur := textDoc(t, "POLICY\n\nCOVERED\n\nCGM devices are covered.\n\nCODES\n\nCPT 70551 MRI brain.\n\nClarité Imaging Review.\n")
	cases := []struct {
		name, quote, side, section string
		ok                         bool
	}{
		{"current", "CGM devices are covered.", SideCurrent, "COVERED", true},
		{"in both: current wins", "CPT 70551 MRI brain.", SideCurrent, "CODES", true},
		{"only previous", "Seat lift mechanisms are covered.", SidePrevious, "COVERED", true},
		{"white space normalised", "  Seat lift\n mechanisms\tare   covered. ", SidePrevious, "COVERED", true},
		{"across blocks", "are covered. CODES CPT 70551", SideCurrent, "COVERED", true},
		{"NFC", "Clarite\u0301 Imaging", SideCurrent, "CODES", true},
		{"invisible characters ignored", "CGM\u200b devices", SideCurrent, "COVERED", true},
		{"case matters", "cgm devices are covered.", "", "", false},
		{"absent", "Power wheelchairs are covered.", "", "", false},
		{"empty", " \n\t", "", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			side, section, ok := VerifyEvidence(c.quote, prev, cur)
			if side != c.side || section != c.section || ok != c.ok {
				t.Errorf("VerifyEvidence(%q) = %q, %q, %v; want %q, %q, %v", c.quote, side, section, ok, c.side, c.section, c.ok)
			}
		})
	}
	if side, _, ok := VerifyEvidence("CGM devices", nil, cur); !ok || side != SideCurrent {
		t.Errorf("nil previous: got %q, %v", side, ok)
	}
	if _, _, ok := VerifyEvidence("CGM devices", nil, nil); ok {
		t.Error("nil documents verified a quote")
	}
	empty := &normalize.Document{}
	if _, _, ok := VerifyEvidence("x", empty, empty); ok {
		t.Error("empty documents verified a quote")
	}
}
