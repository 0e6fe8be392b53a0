package bus

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Consumer is a durable JetStream pull consumer whose messages Concurrency goroutines handle at once.
// Several replicas share the durable consumer, so each message goes to one of them. Handle acknowledges
// (or naks) each message itself, after its own transaction.
type Consumer struct {
	Bus         *Bus
	Log         *slog.Logger
	Stream      jetstream.StreamConfig
	Config      jetstream.ConsumerConfig
	Concurrency int
	Handle      func(context.Context, jetstream.Msg)
}

// Run consumes until ctx ends, starting over (stream, consumer, subscription) whenever the
// subscription ends, e.g. after NATS lost the consumer.
func (c *Consumer) Run(ctx context.Context) error {
	for {
		if err := c.once(ctx); err != nil && ctx.Err() == nil {
			c.Log.Warn("consumer: restarting", "consumer", c.Config.Durable, "error", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func (c *Consumer) once(ctx context.Context) error {
	setup, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	// The platform provisions the streams in the background; ensuring here lets the consumer start
	// without waiting for it, and is a no-op when the stream is already as configured.
	stream, err := c.Bus.EnsureStream(setup, c.Stream)
	if err != nil {
		return err
	}
	cons, err := stream.CreateOrUpdateConsumer(setup, c.Config)
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
	}, jetstream.PullMaxMessages(2*c.Concurrency), jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		c.Log.Debug("consumer: pull", "consumer", c.Config.Durable, "error", err)
	}))
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	for range c.Concurrency {
		wg.Go(func() {
			for {
				select {
				case m := <-msgs:
					c.Handle(ctx, m)
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
