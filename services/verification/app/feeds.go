package app

import (
	"context"

	"github.com/trustlayer/trustlayer/pkg/blobstore"
	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/pkg/serve"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/api"
	"github.com/trustlayer/trustlayer/services/verification/internal/feeds"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
	"github.com/trustlayer/trustlayer/services/verification/internal/web"
)

// registerFeeds wires the data feeds: the exporter loop, the listing API and the signed downloads.
func registerFeeds(ctx context.Context, cfg Config, p *platform.Platform) error {
	blobs, err := blobstore.Open(ctx, cfg.Settings.BlobURL)
	if err != nil {
		return err
	}
	p.OnClose(func() { _ = blobs.Close() })
	artifacts := store.NewFeeds(p.Pool)
	// Download URLs are signed with a key derived from the admin token, which every replica shares.
	signer := feeds.NewSigner(cfg.Spec.Service.AdminToken)
	if err := p.Server.Register(&verificationv1.DataFeedService_ServiceDesc,
		api.NewFeeds(feeds.NewService(artifacts, signer), cfg.Settings.PublicURL), serve.Gateway(verificationv1.RegisterDataFeedServiceHandlerClient, verificationv1.NewDataFeedServiceClient)); err != nil {
		return err
	}
	p.Server.Handle("GET "+feeds.FilePath+"{id}", &web.FeedFiles{Store: artifacts, Blobs: blobs, Signer: signer, Log: p.Log})
	exporter := feeds.NewExporter(store.NewFeedSource(p.Pool), artifacts, blobs, p.Log)
	p.Go(func(ctx context.Context) error { return exporter.Run(ctx, cfg.Settings.FeedExportInterval) })
	return nil
}
