package main

import (
	"fmt"
	"time"

	"github.com/Shopify/sarama"
)

// Transaction is one transaction as the tests send it: its records (each with its partition), the group's
// offsets of the source topic it commits, and whether it ends in a commit or an abort.
type Transaction struct {
	Records []Record        `json:"records"`
	Offsets map[int32]int64 `json:"offsets"`
	Commit  bool            `json:"commit"`
}

// TransactionResult is what a transaction's Produce requests were answered: each partition's base offset.
type TransactionResult struct {
	Commit      bool            `json:"commit"`
	BaseOffsets map[int32]int64 `json:"baseOffsets"`
}

// txnProducer is a transactional producer built from Sarama's request types, since Sarama 1.22 has none
// (Config.Producer.Transaction came with 1.37): FindCoordinator v1 (key type 1), InitProducerId v0,
// AddPartitionsToTxn v0, Produce v3 with the transactional id, AddOffsetsToTxn v0, TxnOffsetCommit v0 to the
// group's coordinator, EndTxn v0. The sequence of each partition runs on across transactions (one epoch).
type txnProducer struct {
	client      sarama.Client
	config      *sarama.Config
	id          string
	coordinator *sarama.Broker
	producerID  int64
	epoch       int16
	sequences   map[int32]int32
	deadline    time.Time
}

// transact runs the transactions read from stdin in turn with transactional id opts.txnID.
func transact(brokers []string, config *sarama.Config, opts options, txns []Transaction) ([]TransactionResult, error) {
	client, err := sarama.NewClient(brokers, config)
	if err != nil {
		return nil, err
	}
	defer client.Close()
	p := &txnProducer{client: client, config: config, id: opts.txnID, sequences: map[int32]int32{},
		deadline: time.Now().Add(opts.timeout)}
	if err := p.initProducerID(); err != nil {
		return nil, err
	}
	defer p.coordinator.Close()
	var results []TransactionResult
	for i, txn := range txns {
		offsets, err := p.run(opts, txn)
		if err != nil {
			return nil, fmt.Errorf("transaction %d: %w", i, err)
		}
		results = append(results, TransactionResult{Commit: txn.Commit, BaseOffsets: offsets})
	}
	return results, nil
}

// retry calls request until it answers an error code that is not retriable: CONCURRENT_TRANSACTIONS while
// the previous transaction completes, a coordinator loading, or one that moved (then moved is called first).
func (p *txnProducer) retry(what string, request func() (sarama.KError, error), moved func() error) error {
	for {
		code, err := request()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		switch code {
		case sarama.ErrNoError:
			return nil
		case sarama.ErrConcurrentTransactions, sarama.ErrOffsetsLoadInProgress,
			sarama.ErrConsumerCoordinatorNotAvailable, sarama.ErrNotCoordinatorForConsumer:
			if time.Now().After(p.deadline) {
				return fmt.Errorf("%s: still %v at the deadline", what, code)
			}
			if code == sarama.ErrConsumerCoordinatorNotAvailable || code == sarama.ErrNotCoordinatorForConsumer {
				if err := moved(); err != nil {
					return fmt.Errorf("%s: %w", what, err)
				}
			}
			time.Sleep(100 * time.Millisecond)
		default:
			return fmt.Errorf("%s: %w", what, code)
		}
	}
}

// toCoordinator retries a request to the transaction coordinator, found again when it moved.
func (p *txnProducer) toCoordinator(what string, request func(*sarama.Broker) (sarama.KError, error)) error {
	return p.retry(what, func() (sarama.KError, error) { return request(p.coordinator) }, p.findCoordinator)
}

// findCoordinator asks a broker (FindCoordinator v1, key type 1) which one coordinates the transactional id.
func (p *txnProducer) findCoordinator() error {
	if p.coordinator != nil {
		_ = p.coordinator.Close()
		p.coordinator = nil
	}
	var found *sarama.Broker
	err := p.retry("FindCoordinator", func() (sarama.KError, error) {
		broker, err := p.client.Controller()
		if err != nil {
			return sarama.ErrNoError, err
		}
		r, err := broker.FindCoordinator(&sarama.FindCoordinatorRequest{Version: 1, CoordinatorKey: p.id,
			CoordinatorType: sarama.CoordinatorTransaction})
		if err != nil {
			return sarama.ErrNoError, err
		}
		found = r.Coordinator
		return r.Err, nil
	}, func() error { return nil })
	if err != nil {
		return err
	}
	if err := found.Open(p.config); err != nil && err != sarama.ErrAlreadyConnected {
		return err
	}
	p.coordinator = found
	return nil
}

func (p *txnProducer) initProducerID() error {
	if err := p.findCoordinator(); err != nil {
		return err
	}
	return p.toCoordinator("InitProducerId", func(coordinator *sarama.Broker) (sarama.KError, error) {
		r, err := coordinator.InitProducerID(&sarama.InitProducerIDRequest{TransactionalID: &p.id,
			TransactionTimeout: 30 * time.Second})
		if err != nil {
			return sarama.ErrNoError, err
		}
		p.producerID, p.epoch = r.ProducerID, r.ProducerEpoch
		return r.Err, nil
	})
}

// run is one transaction: its partitions added, its records produced, its offsets sent, then EndTxn.
func (p *txnProducer) run(opts options, txn Transaction) (map[int32]int64, error) {
	byPartition := map[int32][]Record{}
	for _, r := range txn.Records {
		byPartition[r.Partition] = append(byPartition[r.Partition], r)
	}
	var partitions []int32
	for partition := range byPartition {
		partitions = append(partitions, partition)
	}
	err := p.toCoordinator("AddPartitionsToTxn", func(coordinator *sarama.Broker) (sarama.KError, error) {
		r, err := coordinator.AddPartitionsToTxn(&sarama.AddPartitionsToTxnRequest{TransactionalID: p.id,
			ProducerID: p.producerID, ProducerEpoch: p.epoch,
			TopicPartitions: map[string][]int32{opts.topic: partitions}})
		if err != nil {
			return sarama.ErrNoError, err
		}
		return firstError(r.Errors), nil
	})
	if err != nil {
		return nil, err
	}
	offsets := map[int32]int64{}
	for partition, records := range byPartition {
		if offsets[partition], err = p.produce(opts.topic, partition, records); err != nil {
			return nil, err
		}
	}
	if err := p.sendOffsets(opts, txn.Offsets); err != nil {
		return nil, err
	}
	return offsets, p.toCoordinator("EndTxn", func(coordinator *sarama.Broker) (sarama.KError, error) {
		r, err := coordinator.EndTxn(&sarama.EndTxnRequest{TransactionalID: p.id, ProducerID: p.producerID,
			ProducerEpoch: p.epoch, TransactionResult: txn.Commit})
		if err != nil {
			return sarama.ErrNoError, err
		}
		return r.Err, nil
	})
}

// produce writes records as one transactional batch (Produce v3, acks=all) to the partition's leader.
func (p *txnProducer) produce(topic string, partition int32, records []Record) (int64, error) {
	leader, err := p.client.Leader(topic, partition)
	if err != nil {
		return 0, err
	}
	now := time.Now()
	batch := &sarama.RecordBatch{Version: 2, IsTransactional: true, ProducerID: p.producerID,
		ProducerEpoch: p.epoch, FirstSequence: p.sequences[partition], FirstTimestamp: now, MaxTimestamp: now,
		LastOffsetDelta: int32(len(records) - 1)}
	for i, r := range records {
		record := &sarama.Record{OffsetDelta: int64(i), Value: []byte(r.Value)}
		if r.Key != nil {
			record.Key = []byte(*r.Key)
		}
		batch.Records = append(batch.Records, record)
	}
	request := &sarama.ProduceRequest{TransactionalID: &p.id, RequiredAcks: sarama.WaitForAll, Timeout: 30000,
		Version: 3}
	request.AddBatch(topic, partition, batch)
	response, err := leader.Produce(request)
	if err != nil {
		return 0, err
	}
	block := response.GetBlock(topic, partition)
	if block == nil {
		return 0, fmt.Errorf("Produce to %s-%d: no answer for the partition", topic, partition)
	}
	if block.Err != sarama.ErrNoError {
		return 0, fmt.Errorf("Produce to %s-%d: %w", topic, partition, block.Err)
	}
	p.sequences[partition] += int32(len(records))
	return block.Offset, nil
}

// sendOffsets adds the group to the transaction (AddOffsetsToTxn) and sends its offsets to the group's
// coordinator (TxnOffsetCommit), where they wait for the transaction's marker.
func (p *txnProducer) sendOffsets(opts options, offsets map[int32]int64) error {
	err := p.toCoordinator("AddOffsetsToTxn", func(coordinator *sarama.Broker) (sarama.KError, error) {
		r, err := coordinator.AddOffsetsToTxn(&sarama.AddOffsetsToTxnRequest{TransactionalID: p.id,
			ProducerID: p.producerID, ProducerEpoch: p.epoch, GroupID: opts.group})
		if err != nil {
			return sarama.ErrNoError, err
		}
		return r.Err, nil
	})
	if err != nil {
		return err
	}
	var partitions []*sarama.PartitionOffsetMetadata
	for partition, offset := range offsets {
		partitions = append(partitions, &sarama.PartitionOffsetMetadata{Partition: partition, Offset: offset})
	}
	return p.retry("TxnOffsetCommit", func() (sarama.KError, error) {
		coordinator, err := p.client.Coordinator(opts.group)
		if err != nil {
			return sarama.ErrNoError, err
		}
		r, err := coordinator.TxnOffsetCommit(&sarama.TxnOffsetCommitRequest{TransactionalID: p.id,
			GroupID: opts.group, ProducerID: p.producerID, ProducerEpoch: p.epoch,
			Topics: map[string][]*sarama.PartitionOffsetMetadata{opts.source: partitions}})
		if err != nil {
			return sarama.ErrNoError, err
		}
		return firstError(r.Topics), nil
	}, func() error { return p.client.RefreshCoordinator(opts.group) })
}

func firstError(errors map[string][]*sarama.PartitionError) sarama.KError {
	for _, partitions := range errors {
		for _, e := range partitions {
			if e.Err != sarama.ErrNoError {
				return e.Err
			}
		}
	}
	return sarama.ErrNoError
}
