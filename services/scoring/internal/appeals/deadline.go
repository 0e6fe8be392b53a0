package appeals

import "time"

// PayerClass selects the appeal window and the name of the first appeal level.
type PayerClass string

// The payer classes. Unspecified is what an input without payer_class gets.
const (
	Medicare          PayerClass = "medicare"
	MedicareAdvantage PayerClass = "medicare_advantage"
	Medicaid          PayerClass = "medicaid"
	Commercial        PayerClass = "commercial"
	Unspecified       PayerClass = "unspecified"
)

// appealWindow is the first-level appeal window of a payer class, counted in calendar days from the
// denial date.
type appealWindow struct {
	days int
	// level is what the payer calls a first-level appeal when it has a name of its own (Medicare's
	// redetermination, Medicare Advantage's reconsideration); the letter then asks for it by name.
	level string
	basis string
}

// windows are the regulatory first-level windows. They run from the date of the notice (Medicare:
// from its receipt, presumed 5 days after the notice date; the deadline here ignores those 5 days to
// stay on the safe side). A provider contract may set a shorter window for provider disputes, so the
// basis tells the caller to check it.
var windows = map[PayerClass]appealWindow{
	Medicare: {120, "redetermination",
		"Medicare Part A/B redetermination: 120 days from receipt of the initial determination (42 CFR 405.942(a)), counted here from the denial date."},
	MedicareAdvantage: {65, "reconsideration",
		"Medicare Advantage reconsideration: 65 days from the date of the organization determination notice (42 CFR 422.582(b))."},
	Medicaid: {60, "",
		"Medicaid managed care appeal: 60 days from the date of the adverse benefit determination notice (42 CFR 438.402(c)(2)(ii)); fee-for-service windows vary by state."},
	Commercial: {180, "",
		"Employer group health plan appeal: at least 180 days from receipt of the adverse benefit determination (29 CFR 2560.503-1(h)(3)(i)); a provider contract may set a shorter window."},
	// Without a payer class the shortest window above is the one that cannot be missed.
	Unspecified: {60, "",
		"Payer class not given: the shortest regulatory window (60 days, Medicaid managed care) is assumed; check the payer's notice and contract."},
}

// Deadline is when the first-level appeal must reach the payer.
type Deadline struct {
	Date       string     `json:"date"` // YYYY-MM-DD
	WindowDays int        `json:"window_days"`
	PayerClass PayerClass `json:"payer_class"`
	Basis      string     `json:"basis"`
}

// deadline counts the window from the denial date; it reads no clock, so the same input always gives
// the same deadline.
func deadline(denial time.Time, class PayerClass) *Deadline {
	w := windows[class]
	return &Deadline{
		Date:       denial.AddDate(0, 0, w.days).Format(time.DateOnly),
		WindowDays: w.days,
		PayerClass: class,
		Basis:      w.basis,
	}
}
