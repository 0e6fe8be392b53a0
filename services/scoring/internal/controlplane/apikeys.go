package controlplane

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/trustlayer/trustlayer/pkg/auth"
	"github.com/trustlayer/trustlayer/services/scoring/internal/fault"
	"github.com/trustlayer/trustlayer/services/scoring/internal/keys"
)

// Key deliveries.
const (
	DeliveryResponse  = "response"
	DeliverySetupLink = "setup_link"
)

// Key statuses in a list.
const (
	StatusActive       = "active"
	StatusRevoked      = "revoked"
	StatusSetupPending = "setup_pending"
)

// setupKind starts every setup-link token ("kst_...").
const setupKind = "kst"

// Created is a new workspace key: its secret (delivery response) or its setup link.
type Created struct {
	keys.Key
	Delivery string
	// Secret is set with DeliveryResponse.
	Secret string
	// SetupURL and SetupExpiresAt are set with DeliverySetupLink.
	SetupURL       string
	SetupExpiresAt time.Time
}

// Listed is a workspace key as the list shows it.
type Listed struct {
	keys.Key
	Status string
}

// CreateKey issues a key on the workspace's account. With DeliveryResponse the secret is in the
// answer; with DeliverySetupLink it is sealed behind a one-time link (RevealSetup).
func (s *Service) CreateKey(ctx context.Context, sess Session, name, delivery string) (Created, error) {
	if delivery == "" {
		delivery = DeliveryResponse
	}
	if delivery != DeliveryResponse && delivery != DeliverySetupLink {
		return Created{}, fmt.Errorf("%w: delivery must be %q or %q", fault.ErrInvalid, DeliveryResponse, DeliverySetupLink)
	}
	name, err := checkKeyName(name)
	if err != nil {
		return Created{}, err
	}
	issued, err := s.keys.IssueForAccount(ctx, sess.Workspace.ID, name)
	if err != nil {
		return Created{}, err
	}
	out := Created{Key: issued.Key, Delivery: delivery}
	if delivery == DeliveryResponse {
		out.Secret = issued.Secret
		return out, nil
	}
	token, err := auth.NewAPIKey(setupKind)
	if err != nil {
		return Created{}, err
	}
	sealed, err := seal(token.Secret, issued.ID, []byte(issued.Secret))
	if err != nil {
		return Created{}, err
	}
	expires := s.now().Add(s.linkTTL).Truncate(time.Second)
	if err := s.store.CreateSetupLink(ctx, NewSetupLink{Hash: token.Hash, KeyID: issued.ID, AccountID: sess.Workspace.ID, Sealed: sealed, ExpiresAt: expires}); err != nil {
		return Created{}, err
	}
	// The token travels in the query: the access log and trace span names carry the path only.
	out.SetupURL = s.publicURL + "/v1/control-plane/setup?token=" + url.QueryEscape(token.Secret)
	out.SetupExpiresAt = expires
	return out, nil
}

// ListKeys lists the workspace's keys, newest first, without the hidden agent key.
func (s *Service) ListKeys(ctx context.Context, sess Session) ([]Listed, error) {
	ks, err := s.keys.AccountKeys(ctx, sess.Workspace.ID)
	if err != nil {
		return nil, err
	}
	pending, err := s.store.PendingSetupKeys(ctx, sess.Workspace.ID, s.now())
	if err != nil {
		return nil, err
	}
	out := make([]Listed, len(ks))
	for i, k := range ks {
		status := StatusActive
		switch {
		case k.RevokedAt != nil:
			status = StatusRevoked
		case pending[k.ID]:
			status = StatusSetupPending
		}
		out[i] = Listed{Key: k, Status: status}
	}
	return out, nil
}

// RevokeKey revokes one of the workspace's keys; a key of another workspace is fault.ErrNotFound.
func (s *Service) RevokeKey(ctx context.Context, sess Session, keyID string) error {
	err := s.keys.RevokeForAccount(ctx, sess.Workspace.ID, keyID)
	if errors.Is(err, fault.ErrNotFound) {
		return fmt.Errorf("%w: API key not found in this workspace", fault.ErrNotFound)
	}
	return err
}

// errNoSetupLink is an unknown setup link token, or a link whose key is gone.
var errNoSetupLink = fmt.Errorf("%w: setup link not found", fault.ErrNotFound)

// SetupStatus describes a pending setup link without using it.
func (s *Service) SetupStatus(ctx context.Context, token string) (keys.Key, time.Time, error) {
	link, err := s.store.SetupLinkByHash(ctx, auth.HashAPIKey(token))
	if err != nil {
		return keys.Key{}, time.Time{}, setupLinkError(err)
	}
	if err := s.linkState(link); err != nil {
		return keys.Key{}, time.Time{}, err
	}
	k, err := s.accountKey(ctx, link.AccountID, link.KeyID)
	return k, link.ExpiresAt, setupLinkError(err)
}

// setupLinkError names what was not found when a setup link's lookup found nothing.
func setupLinkError(err error) error {
	if errors.Is(err, fault.ErrNotFound) {
		return errNoSetupLink
	}
	return err
}

// RevealSetup returns the key of a setup link with its secret, once: the link is consumed in the
// same statement that reads it, so two requests at once cannot both reveal it.
func (s *Service) RevealSetup(ctx context.Context, token string) (keys.Issued, error) {
	hash := auth.HashAPIKey(token)
	link, err := s.store.ConsumeSetupLink(ctx, hash, s.now())
	if errors.Is(err, fault.ErrNotFound) {
		// Say why: unknown (404), or used, expired or revoked (410).
		link, err := s.store.SetupLinkByHash(ctx, hash)
		if err != nil {
			return keys.Issued{}, setupLinkError(err)
		}
		if err := s.linkState(link); err != nil {
			return keys.Issued{}, err
		}
		return keys.Issued{}, fmt.Errorf("%w: this setup link can no longer be used", ErrGone)
	}
	if err != nil {
		return keys.Issued{}, err
	}
	secret, err := open(token, link.KeyID, link.Sealed)
	if err != nil {
		return keys.Issued{}, err
	}
	k, err := s.accountKey(ctx, link.AccountID, link.KeyID)
	if err != nil {
		return keys.Issued{}, setupLinkError(err)
	}
	return keys.Issued{Key: k, Secret: string(secret)}, nil
}

func (s *Service) linkState(l SetupLink) error {
	switch {
	case l.RevealedAt != nil:
		return fmt.Errorf("%w: this setup link was already used", ErrGone)
	case l.KeyRevoked:
		return fmt.Errorf("%w: the key of this setup link was revoked", ErrGone)
	case !s.now().Before(l.ExpiresAt):
		return fmt.Errorf("%w: this setup link has expired", ErrGone)
	}
	return nil
}

// accountKey finds one key of the account.
func (s *Service) accountKey(ctx context.Context, accountID, keyID string) (keys.Key, error) {
	ks, err := s.keys.AccountKeys(ctx, accountID)
	if err != nil {
		return keys.Key{}, err
	}
	for _, k := range ks {
		if k.ID == keyID {
			return k, nil
		}
	}
	return keys.Key{}, fault.ErrNotFound
}

// seal encrypts a key's secret under a key derived from the link's token (HKDF-SHA256, RFC 5869;
// AES-256-GCM), bound to the key's id: the database holds only the token's hash, so its rows alone
// open no link.
func seal(token, keyID string, secret []byte) ([]byte, error) {
	aead, err := linkAEAD(token)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return aead.Seal(nonce, nonce, secret, []byte(keyID)), nil
}

func open(token, keyID string, sealed []byte) ([]byte, error) {
	aead, err := linkAEAD(token)
	if err != nil {
		return nil, err
	}
	if len(sealed) < aead.NonceSize() {
		return nil, errors.New("setup link: sealed secret too short")
	}
	n := aead.NonceSize()
	return aead.Open(nil, sealed[:n], sealed[n:], []byte(keyID))
}

func linkAEAD(token string) (cipher.AEAD, error) {
	k, err := hkdf.Key(sha256.New, []byte(token), nil, "scoring key setup link v1", 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}
