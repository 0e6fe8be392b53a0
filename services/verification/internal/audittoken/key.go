package audittoken

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
)

// errKey starts every error of ParseSigningKey. The errors name PEM block types and key kinds only:
// they end up in start-up logs, and the key text, or any part of it, must never reach a log.
var errKey = errors.New("audittoken: signing key")

// ParseSigningKey reads a PEM private key: a PKCS#8 "PRIVATE KEY" block holding an Ed25519 or ECDSA
// P-256 key, or a SEC1 "EC PRIVATE KEY" block holding a P-256 key. Blocks of EC parameters, which
// `openssl ecparam -genkey` writes before the key, are skipped. Other keys are refused rather than
// accepted with an algorithm the Verifier side may not expect.
func ParseSigningKey(pemText []byte) (crypto.Signer, error) {
	var key crypto.Signer
	rest := pemText
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type == "EC PARAMETERS" {
			continue
		}
		if key != nil {
			// Two keys leave it to chance which one signs; the operator must choose.
			return nil, fmt.Errorf("%w: more than one PEM block; give exactly one private key", errKey)
		}
		k, err := parseBlock(block)
		if err != nil {
			return nil, err
		}
		key = k
	}
	if key == nil {
		msg := "no PEM block found"
		if strings.Contains(string(pemText), `\n`) {
			// Environment variables and secret stores often turn line breaks into a literal \n.
			msg += ` (the text holds a literal \n; the PEM needs real line breaks)`
		}
		return nil, fmt.Errorf("%w: %s", errKey, msg)
	}
	return key, nil
}

func parseBlock(block *pem.Block) (crypto.Signer, error) {
	switch block.Type {
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			// x509's message is dropped: it is only ever "this is not PKCS#8", and dropping it is the
			// simplest proof that no key bytes leak.
			return nil, fmt.Errorf("%w: PKCS#8 %q block is not a valid private key", errKey, block.Type)
		}
		switch k := k.(type) {
		case ed25519.PrivateKey:
			return k, nil
		case *ecdsa.PrivateKey:
			return checkP256(k)
		case *rsa.PrivateKey:
			return nil, fmt.Errorf("%w: RSA keys are not supported; use Ed25519 or ECDSA P-256", errKey)
		default:
			return nil, fmt.Errorf("%w: unsupported PKCS#8 key type %T; use Ed25519 or ECDSA P-256", errKey, k)
		}
	case "EC PRIVATE KEY":
		k, err := x509.ParseECPrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: SEC1 %q block is not a valid EC private key (or its curve is unsupported)", errKey, block.Type)
		}
		return checkP256(k)
	case "RSA PRIVATE KEY":
		return nil, fmt.Errorf("%w: RSA keys are not supported; use Ed25519 or ECDSA P-256", errKey)
	case "ENCRYPTED PRIVATE KEY":
		return nil, fmt.Errorf("%w: encrypted keys are not supported; give the key unencrypted (from a secret store)", errKey)
	default:
		return nil, fmt.Errorf("%w: unsupported PEM block type %q; want \"PRIVATE KEY\" or \"EC PRIVATE KEY\"", errKey, block.Type)
	}
}

// checkP256 admits P-256 only: ES256 is defined for it alone, and larger curves would need ES384 or
// ES512, which the verifiers do not allow.
func checkP256(k *ecdsa.PrivateKey) (crypto.Signer, error) {
	if k.Curve != elliptic.P256() {
		return nil, fmt.Errorf("%w: ECDSA curve %s is not supported; use P-256", errKey, k.Curve.Params().Name)
	}
	return k, nil
}

// GenerateKey makes an Ed25519 key, for a service started without a configured key. Such a key lives
// only in memory, so its tokens stop verifying when the process ends and other replicas never accept
// them: fine for development, and the caller should log a warning.
func GenerateKey() (crypto.Signer, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("audittoken: generate key: %w", err)
	}
	return priv, nil
}
