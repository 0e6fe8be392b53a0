package schedule

import (
	"errors"
	"testing"
	"time"
)

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestNext(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		s     Schedule
		after string
		want  string
	}{
		{"interval", Schedule{IntervalSeconds: 3600}, "2026-03-01T10:15:30.5Z", "2026-03-01T11:15:30Z"},
		{"interval ignores the zone", Schedule{IntervalSeconds: 60, Timezone: "Asia/Tokyo"}, "2026-03-01T10:15:00Z", "2026-03-01T10:16:00Z"},
		{"cron utc", Schedule{Cron: "0 3 * * *"}, "2026-03-01T10:15:00Z", "2026-03-02T03:00:00Z"},
		{"cron strictly after", Schedule{Cron: "0 3 * * *"}, "2026-03-02T03:00:00Z", "2026-03-03T03:00:00Z"},
		{"cron in a zone", Schedule{Cron: "30 9 * * MON-FRI", Timezone: "Europe/Paris"}, "2026-03-06T09:00:00Z", "2026-03-09T08:30:00Z"},
		{"cron step", Schedule{Cron: "*/15 * * * *"}, "2026-03-01T10:16:00Z", "2026-03-01T10:30:00Z"},
		{"cron names", Schedule{Cron: "0 0 1 JAN *"}, "2026-03-01T10:16:00Z", "2027-01-01T00:00:00Z"},
		// 2026-03-29 02:30 does not exist in Paris (clocks go from 02:00 to 03:00): that day is skipped.
		{"skipped wall time", Schedule{Cron: "30 2 * * *", Timezone: "Europe/Paris"}, "2026-03-28T12:00:00Z", "2026-03-30T00:30:00Z"},
		// 2026-10-25 02:30 happens twice in Paris: it is due at the first.
		{"repeated wall time", Schedule{Cron: "30 2 * * *", Timezone: "Europe/Paris"}, "2026-10-24T12:00:00Z", "2026-10-25T00:30:00Z"},
		{"leap day", Schedule{Cron: "0 0 29 2 *"}, "2026-03-01T00:00:00Z", "2028-02-29T00:00:00Z"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Next(tc.s, mustTime(t, tc.after))
			if err != nil {
				t.Fatalf("Next: %v", err)
			}
			if want := mustTime(t, tc.want); !got.Equal(want) || got.Location() != time.UTC {
				t.Errorf("got %v, want %v (UTC)", got, want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		s     Schedule
		field string // "" = valid
	}{
		{"interval", Schedule{IntervalSeconds: 300}, ""},
		{"cron", Schedule{Cron: "0 */6 * * *", Timezone: "America/New_York"}, ""},
		{"cron spaces", Schedule{Cron: "  0 3 * * *  "}, ""},
		{"utc", Schedule{Cron: "0 3 * * *", Timezone: "UTC"}, ""},
		{"neither", Schedule{}, "interval_seconds"},
		{"both", Schedule{IntervalSeconds: 300, Cron: "* * * * *"}, "cron"},
		{"interval too short", Schedule{IntervalSeconds: 59}, "interval_seconds"},
		{"interval negative", Schedule{IntervalSeconds: -5}, "interval_seconds"},
		{"interval too long", Schedule{IntervalSeconds: MaxInterval + 1}, "interval_seconds"},
		{"six fields", Schedule{Cron: "0 0 3 * * *"}, "cron"},
		{"four fields", Schedule{Cron: "0 3 * *"}, "cron"},
		{"descriptor", Schedule{Cron: "@daily"}, "cron"},
		{"every", Schedule{Cron: "@every 1m"}, "cron"},
		{"tz prefix", Schedule{Cron: "CRON_TZ=Asia/Tokyo 0 3 * * *"}, "cron"},
		{"minute out of range", Schedule{Cron: "60 3 * * *"}, "cron"},
		{"zero step", Schedule{Cron: "*/0 * * * *"}, "cron"},
		{"garbage", Schedule{Cron: "a b c d e"}, "cron"},
		{"never due", Schedule{Cron: "0 0 30 2 *"}, "cron"},
		{"too long", Schedule{Cron: "0 0 1 1 " + string(make([]byte, MaxCronLength))}, "cron"},
		{"unknown zone", Schedule{Cron: "0 3 * * *", Timezone: "Mars/Olympus"}, "timezone"},
		{"local zone", Schedule{Cron: "0 3 * * *", Timezone: "Local"}, "timezone"},
		{"path zone", Schedule{Cron: "0 3 * * *", Timezone: "../../etc/passwd"}, "timezone"},
		{"bad zone with interval", Schedule{IntervalSeconds: 300, Timezone: "nowhere"}, "timezone"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.s.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("got %v, want valid", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, want a FieldError on %s", err, tc.field)
			}
			if fe.Field != tc.field {
				t.Errorf("got field %q (%v), want %q", fe.Field, err, tc.field)
			}
		})
	}
}

func TestNeverDue(t *testing.T) {
	t.Parallel()
	_, err := Next(Schedule{Cron: "0 0 31 4 *"}, time.Now())
	if !errors.Is(err, ErrNeverDue) {
		t.Fatalf("got %v, want ErrNeverDue", err)
	}
}

// FuzzValidate feeds untrusted expressions and zones: Validate never panics, and a valid schedule
// has a next due time after the given one, in whole seconds.
func FuzzValidate(f *testing.F) {
	for _, seed := range []string{"0 3 * * *", "*/15 * * * *", "0 0 30 2 *", "@daily", "1-5/2 * * JAN-MAR MON,WED", "* * * * * *", "0-59/0 * * * *", "-1 * * * *", "5-1 * * * *", "? ? ? ? ?"} {
		f.Add(seed, "UTC", 0)
	}
	f.Add("", "Europe/Paris", 3600)
	f.Fuzz(func(t *testing.T, expr, zone string, interval int) {
		s := Schedule{Cron: expr, Timezone: zone, IntervalSeconds: interval}
		if s.Validate() != nil {
			return
		}
		after := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		next, err := Next(s, after)
		if err != nil {
			t.Fatalf("valid schedule %+v: Next: %v", s, err)
		}
		if !next.After(after) || next.Nanosecond() != 0 {
			t.Fatalf("valid schedule %+v: next %v, want whole seconds after %v", s, next, after)
		}
	})
}
