package webhooks

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/safehttp"
)

// leaseMargin is how much longer than one POST a worker's lease on a delivery lasts: time to record
// the outcome. A crashed worker's delivery is free again once the lease runs out.
const leaseMargin = 15 * time.Second

// LeaseFor is how long a worker holds a delivery when one POST may take timeout; the job's
// acknowledgement deadline must be longer, so that a redelivered job finds the lease expired.
func LeaseFor(timeout time.Duration) time.Duration { return timeout + leaseMargin }

// Deliver makes attempt number attempt of a delivery, if it is still due: a job that arrives twice,
// late, or while another worker holds the delivery does nothing. It claims the delivery (a lease, so
// that no other worker sends it meanwhile), sends it, and records the attempt and schedules the retry
// in one transaction; a crash before the record leaves the delivery as it was, and the redelivered
// job tries again once the lease has run out. It returns an error only when the outcome could not be
// recorded; the caller must then leave the job unacknowledged.
func (s *Service) Deliver(ctx context.Context, deliveryID uuid.UUID, attempt int) error {
	leased := s.now()
	c, found, err := s.store.ClaimDelivery(ctx, deliveryID, attempt, LeaseFor(s.cfg.Timeout))
	if err != nil || !found {
		return err
	}
	out, err := s.attempt(ctx, c, leased)
	if err != nil {
		return err
	}
	return s.store.RecordOutcome(ctx, c, out)
}

// errLeaseLapsed: a delivery waited for a slot until its lease, taken at leased, had too little left
// for a POST and its record; it is left to the lease's end and the work queue.
var errLeaseLapsed = errors.New("webhook delivery: the lease ran short while waiting for a delivery slot")

// attempt decides what becomes of a delivery claimed at leased, sending it when its endpoint may
// receive it, once it has one of the replica's delivery slots (Config.Workers: the POSTs in flight).
// It fails only when ctx ends first (shutting down, the service records nothing, so that the
// redelivered job tries again) or with errLeaseLapsed.
func (s *Service) attempt(ctx context.Context, c Claim, leased time.Time) (Outcome, error) {
	switch {
	case c.Endpoint.Revoked:
		return Outcome{Status: StatusFailed, FailureReason: ReasonEndpointRevoked}, nil
	case c.Endpoint.Disabled:
		return Outcome{Status: StatusFailed, FailureReason: ReasonEndpointDisabled}, nil
	}
	if !s.slots.acquire(ctx) {
		return Outcome{}, ctx.Err()
	}
	defer s.slots.release()
	if s.now().Sub(leased) > leaseMargin {
		return Outcome{}, errLeaseLapsed
	}
	rec, sendErr := s.send(ctx, c)
	if ctx.Err() != nil {
		return Outcome{}, ctx.Err()
	}
	return s.judge(c.Attempt, rec, sendErr), nil
}

// send POSTs the event once and returns the attempt's record and the client's error.
func (s *Service) send(ctx context.Context, c Claim) (Attempt, error) {
	start := s.now()
	rec := Attempt{Attempt: c.Attempt, StartedAt: start}
	headers, err := SignedHeaders(c.Endpoint.Secret, c.EventID.String(), start, c.Payload)
	if err != nil {
		// A stored secret that does not decode is a bug, not the receiver's fault; it still counts as
		// a failed attempt so that the delivery does not loop.
		rec.Error = errMalformedSecret
		rec.FinishedAt = s.now()
		return rec, err
	}
	resp, err := s.client.Do(ctx, &safehttp.Request{Method: http.MethodPost, URL: c.Endpoint.URL, Header: headers, Body: c.Payload})
	if err == nil {
		rec.StatusCode = resp.Status
		rec.ResponseExcerpt = readExcerpt(resp.Body)
	} else {
		var fe *safehttp.Error
		if errors.As(err, &fe) {
			rec.StatusCode = fe.Status
			if len(fe.Excerpt) > 0 {
				rec.ResponseExcerpt = readExcerpt(io.NopCloser(bytes.NewReader(fe.Excerpt)))
			}
		}
		// Customers read the record: a stable code and a fixed message, never the resolver's text or an
		// address. The detail goes to the log; safehttp's texts name the host, never the URL (whose
		// path or query may hold a token).
		rec.Error = safehttp.PublicErrorText(err)
		s.log.Warn("webhook delivery attempt failed", "delivery_id", c.DeliveryID, "endpoint_id", c.Endpoint.ID,
			"attempt", c.Attempt, "code", strings.SplitN(rec.Error, ":", 2)[0], "error", err.Error())
	}
	rec.FinishedAt = s.now()
	rec.LatencyMS = rec.FinishedAt.Sub(start).Milliseconds()
	return rec, err
}

// errMalformedSecret is the attempt error recorded when the stored secret cannot sign.
const errMalformedSecret = "signing_failed: cannot sign: malformed secret"

// PublicAttemptError maps a stored attempt error to what the API shows: the "code: message" texts
// written since attempts record codes pass unchanged, older texts (which quoted the resolver and
// resolved addresses) are reduced to their code and fixed message.
func PublicAttemptError(stored string) string {
	if stored == errMalformedSecret || stored == "cannot sign: malformed secret" {
		return errMalformedSecret
	}
	return safehttp.SanitizeErrorText(stored)
}

// readExcerpt keeps the first KiB of a body as valid UTF-8 text and drains the rest (up to the
// client's cap) so that the connection is reused.
func readExcerpt(body io.ReadCloser) string {
	defer body.Close()
	head, _ := io.ReadAll(io.LimitReader(body, excerptLimit))
	_, _ = io.Copy(io.Discard, body)
	head = bytes.ReplaceAll(head, []byte{0}, nil) // PostgreSQL text cannot hold NUL
	text := strings.ToValidUTF8(string(head), "\uFFFD")
	for len(text) > excerptLimit {
		_, size := utf8.DecodeLastRuneInString(text)
		text = text[:len(text)-size]
	}
	return text
}

// judge decides what an attempt means for the delivery and its endpoint.
func (s *Service) judge(attempt int, rec Attempt, err error) Outcome {
	out := Outcome{Attempt: &rec}
	var fe *safehttp.Error
	isStatus := errors.As(err, &fe) && fe.Kind == safehttp.KindStatus
	switch {
	case err == nil:
		out.Status = StatusSucceeded
		out.Endpoint.Succeeded = true
	case isStatus && fe.Status == http.StatusGone:
		out.Status, out.FailureReason = StatusFailed, ReasonEndpointGone
		out.Endpoint.Gone = true
	case attempt >= s.cfg.MaxAttempts:
		out.Status = StatusExhausted
		out.Endpoint.Exhausted, out.Endpoint.DisableAfter = true, s.cfg.DisableAfter
	default:
		var retryAfter time.Duration
		if fe != nil {
			retryAfter = fe.RetryAfter
		}
		out.Status = StatusPending
		out.NextAttemptAt = rec.FinishedAt.Add(retryDelay(attempt, s.cfg.RetryBase, s.cfg.RetryMax, retryAfter, s.jitter()))
	}
	return out
}
