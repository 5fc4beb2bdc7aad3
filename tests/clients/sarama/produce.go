package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/Shopify/sarama"
)

var codecs = map[string]sarama.CompressionCodec{
	"none": sarama.CompressionNone, "gzip": sarama.CompressionGZIP,
	"snappy": sarama.CompressionSnappy, "lz4": sarama.CompressionLZ4,
}

// produce sends the records read from stdin with a SyncProducer, one SendMessages call so that records
// for one partition travel in one batch (message set at 0.8.2.0); a record's partition field is ignored
// and chosen by Sarama's hash partitioner from its key. It returns the records with their partitions and
// offsets as the broker acknowledged them.
func produce(brokers []string, config *sarama.Config, opts options) ([]Record, error) {
	codec, ok := codecs[opts.codec]
	if !ok {
		return nil, fmt.Errorf("unknown codec %q", opts.codec)
	}
	config.Producer.Compression = codec
	config.Producer.Flush.Messages = 1000
	config.Producer.Flush.Frequency = 100 * time.Millisecond
	var records []Record
	if err := json.NewDecoder(os.Stdin).Decode(&records); err != nil {
		return nil, err
	}
	producer, err := sarama.NewSyncProducer(brokers, config)
	if err != nil {
		return nil, err
	}
	defer producer.Close()
	messages := make([]*sarama.ProducerMessage, len(records))
	for i, r := range records {
		messages[i] = producerMessage(opts.topic, r)
	}
	if err := producer.SendMessages(messages); err != nil {
		if errs, ok := err.(sarama.ProducerErrors); ok && len(errs) > 0 {
			return nil, fmt.Errorf("%v (the first: %v)", err, errs[0].Err)
		}
		return nil, err
	}
	for i, m := range messages {
		records[i].Partition, records[i].Offset = m.Partition, m.Offset
	}
	return records, nil
}

func producerMessage(topic string, r Record) *sarama.ProducerMessage {
	m := &sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(r.Value)}
	if r.Key != nil {
		m.Key = sarama.StringEncoder(*r.Key)
	}
	if r.Timestamp != 0 {
		m.Timestamp = time.Unix(0, r.Timestamp*int64(time.Millisecond))
	}
	for k, v := range r.Headers {
		m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(k), Value: []byte(v)})
	}
	return m
}

// offsets asks each partition's leader for its earliest and latest offsets (ListOffsets v0 at 0.8.2.0,
// v1 from 0.10.1).
func offsets(brokers []string, config *sarama.Config, opts options) (map[int32][2]int64, error) {
	client, err := sarama.NewClient(brokers, config)
	if err != nil {
		return nil, err
	}
	defer client.Close()
	partitions, err := client.Partitions(opts.topic)
	if err != nil {
		return nil, err
	}
	out := make(map[int32][2]int64, len(partitions))
	for _, p := range partitions {
		earliest, err := client.GetOffset(opts.topic, p, sarama.OffsetOldest)
		if err != nil {
			return nil, err
		}
		latest, err := client.GetOffset(opts.topic, p, sarama.OffsetNewest)
		if err != nil {
			return nil, err
		}
		out[p] = [2]int64{earliest, latest}
	}
	return out, nil
}
