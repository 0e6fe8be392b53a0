package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/safehttp"
	"github.com/trustlayer/trustlayer/services/ingestion/internal/normalize"
)

// Discover runs discovery for one source now: the manual trigger and the scheduler both come here. It
// returns ErrRunInProgress when a run of the source is already going on (on any replica) and
// ErrTermsNotApproved for a source whose terms are not approved.
func (s *Service) Discover(ctx context.Context, sourceID uuid.UUID, trigger string) (Run, error) {
	src, err := s.store.GetSource(ctx, sourceID)
	if err != nil {
		return Run{}, err
	}
	if src.TermsReviewState != "approved" {
		return Run{}, ErrTermsNotApproved
	}
	var run Run
	err = s.store.WithSourceLock(ctx, sourceID, func(ctx context.Context) error {
		run, err = s.discoverLocked(ctx, src, trigger)
		return err
	})
	return run, err
}

func (s *Service) discoverLocked(ctx context.Context, src Source, trigger string) (Run, error) {
	run := Run{ID: uuid.Must(uuid.NewV7()), SourceID: src.ID, Trigger: trigger, StartedAt: s.now()}
	urls, discoverErr := s.discoverURLs(ctx, src)
	var failure error = discoverErr
	var observations []Observation
	for _, u := range urls {
		res, obs, err := s.ingestDocument(ctx, src, run.ID, u)
		if obs.ID != uuid.Nil {
			observations = append(observations, obs)
		}
		if err != nil {
			res.Error = describe(err)
			if failure == nil || permanent(err) {
				failure = err
			}
		}
		run.Resources = append(run.Resources, res)
	}

	health := HealthUpdate{Status: HealthHealthy, NextRunAt: s.now().Add(cadence(src))}
	run.Status = RunSucceeded
	if failure != nil {
		run.Status = RunFailed
		run.ErrorKind = errorKind(failure)
		run.Error = describe(failure)
	}
	switch {
	case failure == nil:
	case ctx.Err() != nil:
		// The run was cut short (the caller went away, the service is stopping): it says nothing about
		// the source, whose health stays as it was, and the next run is due at once. As a permanent
		// error it would have sent the source to review, which the scheduler skips.
		health = HealthUpdate{Status: src.HealthStatus, LastError: src.LastError,
			ConsecutiveFailures: src.ConsecutiveFailures, NextRunAt: s.now()}
	default:
		health.Status, health.LastError, health.ConsecutiveFailures = HealthDegraded, run.Error, src.ConsecutiveFailures+1
		if permanent(failure) {
			// README "Source": a permanent fetch error is never retried and moves the source to review.
			health.Status = HealthReviewRequired
		}
	}
	// The outcome is recorded even when the caller went away mid-run.
	finished := s.now()
	run.FinishedAt = &finished
	if err := s.store.FinishRun(context.WithoutCancel(ctx), run, observations, health); err != nil {
		return run, err
	}
	s.log.InfoContext(ctx, "discovery run finished", "source_id", src.ID, "run_id", run.ID, "trigger", trigger,
		"status", run.Status, "resources", len(run.Resources), "error_kind", run.ErrorKind)
	return run, nil
}

func cadence(src Source) time.Duration { return time.Duration(src.CadenceSeconds) * time.Second }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// ingestDocument fetches one document and carries it through archive, normalisation, extraction and
// the ledger. It returns the fetch's observation, which the run records with its outcome (README
// "Discovery": one per fetch, even when the bytes are unchanged or the fetch failed).
func (s *Service) ingestDocument(ctx context.Context, src Source, runID uuid.UUID, url string) (Resource, Observation, error) {
	res := Resource{URL: url}
	policyID, err := s.store.EnsurePolicy(ctx, src.ID, url)
	if err != nil {
		return res, Observation{}, err
	}
	res.PolicyID = policyID
	obs := Observation{ID: uuid.Must(uuid.NewV7()), PolicyID: policyID, RunID: runID, URL: url, FetchedAt: s.now()}
	res.ObservationID = obs.ID
	res, err = s.fetchDocument(ctx, src, res, &obs)
	return res, obs, err
}

func (s *Service) fetchDocument(ctx context.Context, src Source, res Resource, obs *Observation) (Resource, error) {
	url, policyID := res.URL, res.PolicyID
	client := s.client(src, documentMIME)
	defer client.CloseIdleConnections()
	resp, err := client.Do(ctx, &safehttp.Request{Method: http.MethodGet, URL: url})
	if err != nil {
		obs.ErrorKind, obs.Error = errorKind(err), describe(err)
		s.log.WarnContext(ctx, "document fetch failed", "source_id", src.ID, "policy_id", policyID,
			"error_kind", obs.ErrorKind, "error", err.Error())
		var fe *safehttp.Error
		if errors.As(err, &fe) {
			obs.HTTPStatus = fe.Status
		}
		return res, err
	}
	defer resp.Body.Close()
	fillObservation(obs, resp)

	// Stream the body into a spool while hashing it: a large document goes to a temporary file, never
	// into memory whole.
	body := &spool{}
	defer body.Close()
	obs.RawSHA256, obs.Size, err = HashCopy(body, resp.Body)
	if err != nil {
		obs.RawSHA256 = ""
		obs.ErrorKind, obs.Error = errorKind(err), describe(err)
		return res, err
	}

	asset, found, err := s.store.AssetBySHA(ctx, obs.RawSHA256)
	if err != nil {
		return res, err
	}
	if !found {
		r, err := body.Reader()
		if err != nil {
			return res, err
		}
		key, err := s.archive.Put(ctx, obs.RawSHA256, r, resp.MediaType)
		if err != nil {
			return res, fmt.Errorf("archive: %w", err)
		}
		asset, res.NewAsset, err = s.store.InsertAsset(ctx, Asset{
			ID: uuid.Must(uuid.NewV7()), RawSHA256: obs.RawSHA256, Size: obs.Size, MediaType: resp.MediaType, BlobKey: key,
		})
		if err != nil {
			return res, err
		}
	}
	obs.DocumentAssetID = asset.ID
	res.DocumentAssetID = asset.ID

	r, err := body.Reader()
	if err != nil {
		return res, err
	}
	n, err := s.recordVersion(ctx, src, policyID, url, asset, r, resp.MediaType, body.normalizeOptions()...)
	res.NewVersion, res.Facts = n.newVersion, n.facts
	return res, err
}

// HashCopy copies src to dst and returns the hex SHA-256 of the bytes and their count: one pass,
// nothing held in memory beyond io.Copy's buffer.
func HashCopy(dst io.Writer, src io.Reader) (string, int64, error) {
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(dst, h), src)
	return hex.EncodeToString(h.Sum(nil)), n, err
}

func fillObservation(obs *Observation, resp *safehttp.Response) {
	if resp == nil {
		return
	}
	obs.HTTPStatus = resp.Status
	obs.Headers = resp.Header
	obs.FinalURL = resp.FinalURL
	obs.RedirectChain = resp.Redirects
	obs.Attempts = resp.Attempts
	obs.MediaType = resp.MediaType
	obs.TimingsMS = map[string]float64{
		"dns": ms(resp.Timings.DNS), "connect": ms(resp.Timings.Connect), "tls": ms(resp.Timings.TLS),
		"first_byte": ms(resp.Timings.FirstByte), "total": ms(resp.Timings.Total),
	}
}

// documentErrors are the failures of a fetched document that fetching it again cannot cure: like a
// permanent fetch error they move the source to review.
var documentErrors = []struct {
	err  error
	kind string
}{
	{normalize.ErrNoText, "no_text"},
	{normalize.ErrUnsupportedMediaType, "unsupported_media_type"},
	{normalize.ErrTooLarge, "too_large"},
	{normalize.ErrPDFExtract, "pdf_extract"},
}

func permanent(err error) bool {
	if safehttp.Permanent(err) {
		return true
	}
	for _, d := range documentErrors {
		if errors.Is(err, d.err) {
			return true
		}
	}
	return false
}

// errorKind names a failure for operators as a stable snake_case code: the fetcher's error kinds
// (bad_url, host_not_allowed, blocked_address, too_large, mime, status, timeout, network, dns, tls,
// too_many_redirects, canceled), the document's (no_text, unsupported_media_type, pdf_extract), or
// "internal".
func errorKind(err error) string {
	var fe *safehttp.Error
	if errors.As(err, &fe) {
		return fe.Kind.Code()
	}
	for _, d := range documentErrors {
		if errors.Is(err, d.err) {
			return d.kind
		}
	}
	return "internal"
}

// describe is the failure text stored and shown to operators: the fetcher's and the normaliser's
// messages are written for them (no bodies, no secrets); anything else is summarised.
func describe(err error) string {
	var fe *safehttp.Error
	if errors.As(err, &fe) {
		// A fixed message per kind: the client's text names resolved addresses and the resolver
		// (`lookup x on 10.0.0.53:53`), which would let a caller probe internal DNS; the detail is logged.
		_, msg := safehttp.PublicError(fe)
		return msg
	}
	for _, d := range documentErrors {
		if errors.Is(err, d.err) {
			return d.err.Error()
		}
	}
	return "internal error while processing the document"
}

// PublicError maps a stored run, resource or health error to what the API shows: texts stored before
// describe gave fixed messages quoted the client's error (resolved addresses, the resolver's address)
// and are reduced to their kind's message.
func PublicError(stored string) string {
	if !strings.HasPrefix(stored, "safehttp: ") {
		return stored
	}
	_, msg, _ := strings.Cut(safehttp.SanitizeErrorText(stored), ": ")
	return msg
}
