package main

import (
	"sort"

	"github.com/Shopify/sarama"
)

// TopicInfo is one topic as ClusterAdmin.ListTopics describes it.
type TopicInfo struct {
	Partitions  int32             `json:"partitions"`
	Replication int16             `json:"replication"`
	Replicas    map[int32][]int32 `json:"replicas"`
}

// administer runs one ClusterAdmin call: CreateTopic (CreateTopics v2 at 2.2.0) and DeleteTopic
// (DeleteTopics v1) on the controller, ListTopics (Metadata, then DescribeConfigs) on any broker.
func administer(command string, brokers []string, config *sarama.Config, opts options) (interface{}, error) {
	admin, err := sarama.NewClusterAdmin(brokers, config)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	switch command {
	case "create":
		detail := &sarama.TopicDetail{NumPartitions: int32(opts.partitions), ReplicationFactor: int16(opts.replication)}
		return map[string]string{"created": opts.topic}, admin.CreateTopic(opts.topic, detail, false)
	case "delete":
		return map[string]string{"deleted": opts.topic}, admin.DeleteTopic(opts.topic)
	}
	topics, err := admin.ListTopics()
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(topics))
	for name := range topics {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make(map[string]TopicInfo, len(topics))
	for _, name := range names {
		d := topics[name]
		out[name] = TopicInfo{Partitions: d.NumPartitions, Replication: d.ReplicationFactor, Replicas: d.ReplicaAssignment}
	}
	return out, nil
}
