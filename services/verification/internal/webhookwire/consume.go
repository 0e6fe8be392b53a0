package webhookwire

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trustlayer/trustlayer/pkg/bus"
)

// consumer is a durable JetStream pull consumer whose messages n goroutines handle at once. Several
// replicas share the durable consumer, so each message goes to one of them.
type consumer struct {
	bus    *bus.Bus
	log    *slog.Logger
	stream jetstream.StreamConfig
	config jetstream.ConsumerConfig
	n      int
	handle func(context.Context, jetstream.Msg)
}

// run consumes until ctx ends, starting over (stream, consumer, subscription) whenever the
// subscription ends, e.g. after NATS lost the consumer.
func (c *consumer) run(ctx context.Context) error {
	for {
		if err := c.once(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("webhook consumer: restarting", "consumer", c.config.Durable, "error", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func (c *consumer) once(ctx context.Context) error {
	setup, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	// The platform provisions the streams in the background; ensuring here lets the consumer start
	// without waiting for it, and is a no-op when the stream is already as configured.
	stream, err := c.bus.EnsureStream(setup, c.stream)
	if err != nil {
		return err
	}
	cons, err := stream.CreateOrUpdateConsumer(setup, c.config)
	if err != nil {
		return err
	}
	msgs := make(chan jetstream.Msg)
	stop := make(chan struct{})
	cc, err := cons.Consume(func(m jetstream.Msg) {
		select {
		case msgs <- m:
		case <-stop:
		}
	}, jetstream.PullMaxMessages(2*c.n), jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		c.log.Debug("webhook consumer: pull", "consumer", c.config.Durable, "error", err)
	}))
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	for range c.n {
		wg.Go(func() {
			for {
				select {
				case m := <-msgs:
					c.handle(ctx, m)
				case <-stop:
					return
				}
			}
		})
	}
	select {
	case <-ctx.Done():
	case <-cc.Closed():
	}
	cc.Stop()
	close(stop)
	wg.Wait()
	return nil
}
