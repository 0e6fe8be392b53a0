// Package schedule computes when a target's scheduled scan next falls due: every so many seconds,
// or at the times of a standard five-field cron expression read in an IANA time zone. The
// workspace API validates schedules with it and stores the first due time; enqueue-due advances a
// schedule with Next after each due time it takes.
package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Bounds of a schedule.
const (
	// MinInterval is the shortest interval, and cron expressions cannot fire more often than
	// once a minute either: a scan is a full audit of the target, and a plan counts scans per month.
	MinInterval = 60
	// MaxInterval is the longest interval: 30 days.
	MaxInterval = 30 * 24 * 3600
	// MaxCronLength and MaxTimezoneLength bound the text fields (the longest IANA name is 32 bytes).
	MaxCronLength     = 120
	MaxTimezoneLength = 64
)

// Schedule is when a target is scanned: exactly one of IntervalSeconds and Cron is set.
type Schedule struct {
	// IntervalSeconds is the time between two scans, MinInterval..MaxInterval.
	IntervalSeconds int
	// Cron is a five-field expression (minute hour day-of-month month day-of-week) as cron(8)
	// reads it; ranges, lists, steps and names (JAN, MON) are allowed; descriptors (@daily) and
	// TZ= prefixes are not (the zone is Timezone).
	Cron string
	// Timezone is the IANA name the cron expression is read in ("" is UTC); intervals ignore it.
	Timezone string
}

// FieldError is a schedule's problem, naming the field (interval_seconds, cron, timezone) it is in.
type FieldError struct {
	Field   string
	Message string
	// Err is ErrNeverDue for such an expression, nil otherwise.
	Err error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// Unwrap returns Err.
func (e *FieldError) Unwrap() error { return e.Err }

// ErrNeverDue is wrapped by Next for a cron expression that matches no time in the next five
// years (such as 0 0 30 2 *, the 30th of February).
var ErrNeverDue = errors.New("the cron expression matches no time")

// parser reads standard five-field expressions only.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// Validate reports the first problem of s as a *FieldError, including a cron expression that is
// never due.
func (s Schedule) Validate() error {
	_, err := Next(s, time.Now())
	return err
}

// Location returns the schedule's time zone (UTC when Timezone is empty).
func (s Schedule) Location() (*time.Location, error) {
	if s.Timezone == "" || s.Timezone == "UTC" {
		return time.UTC, nil
	}
	// "Local" would be the server's zone, which no client can know.
	if len(s.Timezone) > MaxTimezoneLength || s.Timezone == "Local" || strings.ContainsAny(s.Timezone, " \\") {
		return nil, &FieldError{Field: "timezone", Message: "want an IANA time zone name such as Europe/Paris"}
	}
	loc, err := time.LoadLocation(s.Timezone)
	if err != nil {
		return nil, &FieldError{Field: "timezone", Message: "unknown time zone " + fmt.Sprintf("%q", s.Timezone)}
	}
	return loc, nil
}

// compiled is a validated schedule.
type compiled struct {
	interval time.Duration
	cron     cron.Schedule
	loc      *time.Location
}

func (s Schedule) compile() (c compiled, err error) {
	switch {
	case s.IntervalSeconds != 0 && s.Cron != "":
		return c, &FieldError{Field: "cron", Message: "give interval_seconds or cron, not both"}
	case s.IntervalSeconds == 0 && s.Cron == "":
		return c, &FieldError{Field: "interval_seconds", Message: "give interval_seconds or cron"}
	}
	if c.loc, err = s.Location(); err != nil {
		return c, err
	}
	if s.IntervalSeconds != 0 {
		if s.IntervalSeconds < MinInterval || s.IntervalSeconds > MaxInterval {
			return c, &FieldError{Field: "interval_seconds", Message: fmt.Sprintf("want %d..%d", MinInterval, MaxInterval)}
		}
		c.interval = time.Duration(s.IntervalSeconds) * time.Second
		return c, nil
	}
	expr := strings.TrimSpace(s.Cron)
	switch {
	case len(s.Cron) > MaxCronLength:
		return c, &FieldError{Field: "cron", Message: fmt.Sprintf("at most %d characters", MaxCronLength)}
	case strings.HasPrefix(expr, "@"):
		return c, &FieldError{Field: "cron", Message: "descriptors such as @daily are not accepted: write the five fields"}
	case strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ="):
		return c, &FieldError{Field: "cron", Message: "give the time zone in timezone, not in the expression"}
	case len(strings.Fields(expr)) != 5:
		return c, &FieldError{Field: "cron", Message: "want five fields: minute hour day-of-month month day-of-week"}
	}
	sched, err := parse(expr)
	if err != nil {
		return c, &FieldError{Field: "cron", Message: err.Error()}
	}
	c.cron = sched
	return c, nil
}

// parse calls the cron parser, turning a panic on a malformed expression into an error.
func parse(expr string) (sched cron.Schedule, err error) {
	defer func() {
		if recover() != nil {
			sched, err = nil, errors.New("malformed cron expression")
		}
	}()
	return parser.Parse(expr)
}

// Next returns the first due time of s strictly after after, in UTC and whole seconds. For an
// interval it is after plus the interval; for a cron expression the next matching minute in the
// schedule's zone (a wall time that a daylight-saving change skips is not due that day; one it
// repeats is due at its first occurrence).
func Next(s Schedule, after time.Time) (time.Time, error) {
	c, err := s.compile()
	if err != nil {
		return time.Time{}, err
	}
	if c.cron == nil {
		return after.Add(c.interval).Truncate(time.Second).UTC(), nil
	}
	next := c.cron.Next(after.In(c.loc))
	if next.IsZero() {
		return time.Time{}, &FieldError{Field: "cron", Message: ErrNeverDue.Error(), Err: ErrNeverDue}
	}
	return next.UTC(), nil
}
