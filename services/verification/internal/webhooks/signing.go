package webhooks

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"strconv"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// secretPrefix marks a Standard Webhooks signing secret.
const secretPrefix = "whsec_"

// secretBytes is the secret's entropy: 32 bytes, above the 24 the Standard Webhooks spec asks for.
const secretBytes = 32

// NewSecret returns a signing secret, "whsec_" + base64 of 32 random bytes.
func NewSecret() (string, error) {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return secretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

// SignedHeaders returns the Standard Webhooks headers of one attempt: webhook-id (the event id, the
// same on every attempt and replay, so receivers can deduplicate), webhook-timestamp (the attempt's
// time in Unix seconds) and webhook-signature ("v1,<base64 HMAC-SHA256 of id.timestamp.body>"). The
// reference library signs, so the signature is the one its Verify expects.
func SignedHeaders(secret, eventID string, at time.Time, body []byte) (http.Header, error) {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return nil, err
	}
	sig, err := wh.Sign(eventID, at, body)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set(standardwebhooks.HeaderWebhookID, eventID)
	h.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(at.Unix(), 10))
	h.Set(standardwebhooks.HeaderWebhookSignature, sig)
	h.Set("Content-Type", "application/json")
	return h, nil
}
