package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/Shopify/sarama"
)

// collector gathers consumed records until it has the count asked for.
type collector struct {
	mu      sync.Mutex
	want    int
	records []Record
	done    chan struct{}
}

func newCollector(want int) *collector {
	return &collector{want: want, done: make(chan struct{})}
}

// add keeps a record and says whether it was still wanted (its offset may then be committed).
func (c *collector) add(m *sarama.ConsumerMessage) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.records) >= c.want {
		return false
	}
	c.records = append(c.records, consumedRecord(m))
	if len(c.records) == c.want {
		close(c.done)
	}
	return true
}

func (c *collector) result() []Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Record(nil), c.records...)
}

func consumedRecord(m *sarama.ConsumerMessage) Record {
	r := Record{Value: string(m.Value), Partition: m.Partition, Offset: m.Offset}
	if m.Key != nil {
		key := string(m.Key)
		r.Key = &key
	}
	if !m.Timestamp.IsZero() && m.Timestamp.Unix() > 0 {
		r.Timestamp = m.Timestamp.UnixNano() / int64(time.Millisecond)
	}
	for _, h := range m.Headers {
		if r.Headers == nil {
			r.Headers = map[string]string{}
		}
		r.Headers[string(h.Key)] = string(h.Value)
	}
	return r
}

// groupHandler marks every wanted record in the group session; the session's offset manager commits
// the marks (OffsetCommit v2) when the session ends.
type groupHandler struct{ collected *collector }

func (groupHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (groupHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h groupHandler) ConsumeClaim(session sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		if h.collected.add(m) {
			session.MarkMessage(m, "")
		}
	}
	return nil
}

// consumeGroup reads count records as a member of the consumer group (JoinGroup, SyncGroup, Heartbeat,
// OffsetFetch, Fetch), then leaves it with the consumed offsets committed.
func consumeGroup(brokers []string, config *sarama.Config, opts options) ([]Record, error) {
	group, err := sarama.NewConsumerGroup(brokers, opts.group, config)
	if err != nil {
		return nil, err
	}
	collected := newCollector(opts.count)
	ctx, cancel := context.WithCancel(context.Background())
	failed := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if err := group.Consume(ctx, []string{opts.topic}, groupHandler{collected}); err != nil {
				failed <- err
				return
			}
		}
	}()
	err = wait(collected, failed, group.Errors(), opts.timeout)
	cancel()
	if closeErr := group.Close(); err == nil {
		err = closeErr
	}
	return collected.result(), err
}

// consumePartitions is what a 0.8.2 client has without group membership: a partition consumer per
// partition (Fetch v0) from the group's committed offsets, which the offset manager fetches (OffsetFetch
// v1 from the coordinator found with GroupCoordinator v0) and commits (OffsetCommit v1) on close.
func consumePartitions(brokers []string, config *sarama.Config, opts options) ([]Record, error) {
	client, err := sarama.NewClient(brokers, config)
	if err != nil {
		return nil, err
	}
	defer client.Close()
	manager, err := sarama.NewOffsetManagerFromClient(opts.group, client)
	if err != nil {
		return nil, err
	}
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return nil, err
	}
	partitions, err := client.Partitions(opts.topic)
	if err != nil {
		return nil, err
	}
	collected, failed := newCollector(opts.count), make(chan error, len(partitions))
	var closers []func() error
	for _, p := range partitions {
		pom, err := manager.ManagePartition(opts.topic, p)
		if err != nil {
			return nil, err
		}
		next, _ := pom.NextOffset()
		pc, err := consumer.ConsumePartition(opts.topic, p, next)
		if err != nil {
			return nil, fmt.Errorf("partition %d from offset %d: %w", p, next, err)
		}
		closers = append(closers, pc.Close, pom.Close)
		go func(pc sarama.PartitionConsumer, pom sarama.PartitionOffsetManager) {
			for m := range pc.Messages() {
				if collected.add(m) {
					pom.MarkOffset(m.Offset+1, "")
				}
			}
		}(pc, pom)
		go func(pc sarama.PartitionConsumer) {
			for e := range pc.Errors() {
				failed <- e
			}
		}(pc)
	}
	err = wait(collected, failed, nil, opts.timeout)
	for _, c := range closers {
		_ = c()
	}
	if closeErr := manager.Close(); err == nil {
		err = closeErr
	}
	return collected.result(), err
}

func wait(collected *collector, failed <-chan error, groupErrors <-chan error, timeout time.Duration) error {
	select {
	case <-collected.done:
		return nil
	case err := <-failed:
		return err
	case err := <-groupErrors:
		return err
	case <-time.After(timeout):
		return fmt.Errorf("%d of %d records after %s", len(collected.result()), collected.want, timeout)
	}
}
