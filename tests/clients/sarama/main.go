// Command sarama-client drives Sarama (Debian's golang-github-shopify-sarama-dev) against a cluster for
// zkafka's integration tests (tests/integration/test_sarama.py). Sarama does not negotiate: it sends the
// request versions its -version implies, so the same program exercises a 2.2 client and a 0.8.2 one.
//
//	sarama-client -brokers host:port,... -version 2.2.0|0.8.2.0 COMMAND [flags]
//
// Commands (each prints one JSON document on stdout; errors go to stderr with a non-zero exit):
//
//	produce  -topic T -codec none|gzip|snappy|lz4   records as a JSON array on stdin
//	consume  -topic T -group G -count N              N records, their offsets committed for G
//	         [-isolation read_committed]             Fetch v4+ isolation: aborted transactions dropped
//	transact -topic T -txn-id ID -group G -source S  transactions as a JSON array on stdin, each its records'
//	                                                 partitions' base offsets; G's offsets are those of S
//	offsets  -topic T                                each partition's earliest and latest offset
//	create   -topic T -partitions P -replication R   ClusterAdmin.CreateTopic (2.2.0 only)
//	delete   -topic T                                ClusterAdmin.DeleteTopic (2.2.0 only)
//	topics                                           ClusterAdmin.ListTopics (2.2.0 only)
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/Shopify/sarama"
)

// Record is one record as the tests send and read it.
type Record struct {
	Key       *string           `json:"key"`
	Value     string            `json:"value"`
	Partition int32             `json:"partition"`
	Offset    int64             `json:"offset"`
	Timestamp int64             `json:"timestamp,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
}

type options struct {
	topic       string
	group       string
	codec       string
	count       int
	partitions  int
	replication int
	isolation   string
	txnID       string
	source      string
	timeout     time.Duration
}

func main() {
	brokers := flag.String("brokers", "", "bootstrap servers, comma-separated")
	version := flag.String("version", "2.2.0", "the Kafka version Sarama speaks (2.2.0 or 0.8.2.0)")
	flag.Parse()
	if flag.NArg() < 1 || *brokers == "" {
		log.Fatal("usage: sarama-client -brokers host:port,... -version V COMMAND [flags]")
	}
	config, err := newConfig(*version)
	if err != nil {
		log.Fatal(err)
	}
	command, opts := flag.Arg(0), parseCommand(flag.Args()[1:])
	if err := isolate(config, opts.isolation); err != nil {
		log.Fatal(err)
	}
	out, err := run(command, strings.Split(*brokers, ","), config, opts)
	if err != nil {
		log.Fatalf("%s: %v", command, err)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		log.Fatal(err)
	}
}

func parseCommand(args []string) options {
	var opts options
	fs := flag.NewFlagSet("command", flag.ExitOnError)
	fs.StringVar(&opts.topic, "topic", "", "topic")
	fs.StringVar(&opts.group, "group", "", "consumer group")
	fs.StringVar(&opts.codec, "codec", "none", "compression codec")
	fs.IntVar(&opts.count, "count", 0, "records to consume")
	fs.IntVar(&opts.partitions, "partitions", 1, "partitions of a created topic")
	fs.IntVar(&opts.replication, "replication", 1, "replication factor of a created topic")
	fs.StringVar(&opts.txnID, "txn-id", "", "transactional id")
	fs.StringVar(&opts.source, "source", "", "the topic of the offsets a transaction commits for the group")
	fs.StringVar(&opts.isolation, "isolation", "read_uncommitted", "read_uncommitted or read_committed")
	fs.DurationVar(&opts.timeout, "timeout", 60*time.Second, "how long to wait for the records")
	_ = fs.Parse(args)
	return opts
}

func newConfig(version string) (*sarama.Config, error) {
	v, err := sarama.ParseKafkaVersion(version)
	if err != nil {
		return nil, err
	}
	config := sarama.NewConfig()
	config.Version = v
	config.ClientID = "zkafka-sarama-" + version
	config.Metadata.Retry.Max = 10
	config.Metadata.Retry.Backoff = 500 * time.Millisecond
	config.Producer.Return.Successes = true
	config.Producer.RequiredAcks = sarama.WaitForAll
	config.Producer.Retry.Max = 10
	config.Consumer.Offsets.Initial = sarama.OffsetOldest
	config.Consumer.Return.Errors = true
	config.Admin.Timeout = 30 * time.Second
	return config, config.Validate()
}

// isolate sets the consumer's isolation level; read_committed needs a version of 0.11 or later.
func isolate(config *sarama.Config, isolation string) error {
	switch isolation {
	case "read_uncommitted":
		config.Consumer.IsolationLevel = sarama.ReadUncommitted
	case "read_committed":
		config.Consumer.IsolationLevel = sarama.ReadCommitted
	default:
		return fmt.Errorf("unknown isolation level %q", isolation)
	}
	return config.Validate()
}

func run(command string, brokers []string, config *sarama.Config, opts options) (interface{}, error) {
	switch command {
	case "produce":
		return produce(brokers, config, opts)
	case "consume":
		if config.Version.IsAtLeast(sarama.V0_10_2_0) {
			return consumeGroup(brokers, config, opts)
		}
		return consumePartitions(brokers, config, opts)
	case "transact":
		var txns []Transaction
		if err := json.NewDecoder(os.Stdin).Decode(&txns); err != nil {
			return nil, fmt.Errorf("transactions on stdin: %w", err)
		}
		return transact(brokers, config, opts, txns)
	case "offsets":
		return offsets(brokers, config, opts)
	case "create", "delete", "topics":
		return administer(command, brokers, config, opts)
	}
	return nil, fmt.Errorf("unknown command %q", command)
}
