package train

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// published are the SHA-256 digests of the artifacts of every published model version. A published
// version never changes its answers: its weights, calibration, tiers, cards and diagrams stay these
// bytes forever, and an improvement ships as a new version beside it. Never update a digest here;
// add the files of a new version instead.
var published = map[string]string{
	"denial-0.3.3-cms_v1.card.json":                       "3db5149916a22d9a2dde089b74572d1a6ba1ca61620bbcff244ab2e946c46adf",
	"denial-0.3.3-cms_v1.card.md":                         "93984848b967abb9a1848a111cd591b26a5cd21761c5cf4c42bacabaf5414165",
	"denial-0.3.3-cms_v1.reliability.png":                 "1bd03748af18ef24048812b652feb85016066f3516a544af94680edff21823c0",
	"denial-0.3.3-commercial_beta.card.json":              "d374d9a5715b05d60f438197852d572dd8f2f2fd40c5c17e28630375ff2138f3",
	"denial-0.3.3-commercial_beta.card.md":                "22b3aedae94972c6653895cf4db1ac212d9b05720ec4f3f74688352868ea53d2",
	"denial-0.3.3-commercial_beta.reliability.png":        "8eab7bda955dd84d7e8dbee594bebd7d8a00ba60eee6e1bec74893c07acdd29c",
	"denial-0.3.3-synthetic_v1.card.json":                 "73910ec3e1f4919dcf0e0001a0bd28a34d6b4451b8257ff52a40e8cd647c4a22",
	"denial-0.3.3-synthetic_v1.card.md":                   "bcd9c79045808041d3f3f6cce33b1f4c3c50d7d24a2c2277994ac1d2390627a8",
	"denial-0.3.3-synthetic_v1.reliability.png":           "69d66f4333162921f94965959dea80be793f8219f1b71b67f6d49d07aa6207dc",
	"denial-0.3.3.json":                                   "1db9b01182550a7ecc94d56cf0bfe09c70001c4746803832324f5066460d61fe",
	"prior_auth-0.2.3-prior-auth-on-file.card.json":       "60b3cbb9938e45de38855a37d84f23bbba0e99fb7573cc1a7c93698e6a12f69e",
	"prior_auth-0.2.3-prior-auth-on-file.card.md":         "4e828def459d61d2a4b168bfca583029994218d59ea0d3796f49ab3fdafd50ca",
	"prior_auth-0.2.3-prior-auth-on-file.json":            "f656d84e2390401fa3c07e7bd1470b766e2c35c22ce4a48adc493241d9eefe2f",
	"prior_auth-0.2.3-prior-auth-on-file.reliability.png": "8f8f229c8452baccccedca86f8d9a065a9e87fc014907a66d1d370234fabcef3",
	"reimbursement-0.2.1.card.json":                       "53691c8f1e4f1b03a27174ae141995051becff2649cb17db400004ec1cd3bd05",
	"reimbursement-0.2.1.card.md":                         "660cb416350214646ac4202c809d60a8b84c53f63da177c892777fd5f92db5c9",
	"reimbursement-0.2.1.json":                            "fc97eb52db688f544773f4e11da0c0681f47f4ae3a76d77c4010c91dda52d5b5",
}

func TestPublishedVersionsAreFrozen(t *testing.T) {
	t.Parallel()
	for name, want := range published {
		data, err := os.ReadFile(filepath.Join(committed, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != want {
			t.Errorf("%s: got SHA-256 %s, want %s: a published version's artifacts must not change", name, got, want)
		}
	}
}
