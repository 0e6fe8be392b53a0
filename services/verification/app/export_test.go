package app

import (
	"context"
	"io"

	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/services/verification/internal/readcache"
)

// BootWithReadCache is Boot with the server state answers cached in c, for the tests (in app_test)
// that watch the cache.
func BootWithReadCache(ctx context.Context, getenv func(string) string, logs io.Writer, c *readcache.Cache) (*platform.Platform, error) {
	cfg, err := loadConfig(getenv, c)
	if err != nil {
		return nil, err
	}
	return open(ctx, cfg, getenv, logs)
}
