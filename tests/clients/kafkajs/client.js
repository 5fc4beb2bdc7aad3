'use strict'
// kafkajs 2.2.4 as an independent client of zkafka's integration tests (tests/integration/test_kafkajs.py).
//
//   node client.js BROKERS COMMAND 'JSON ARGUMENTS'
//
// Prints one JSON document on stdout; kafkajs' own log lines (warnings and errors) go to stderr. A failed
// command exits 1 with the error on stderr.
const { Kafka, CompressionTypes, AssignerProtocol, Partitioners, logLevel } = require('kafkajs')

const CODECS = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP }

function stderrLog () {
  return ({ namespace, level, log }) => {
    const { message, ...extra } = log
    process.stderr.write(`[kafkajs ${namespace} ${level}] ${message} ${JSON.stringify(extra)}\n`)
  }
}

function record (partition, message) {
  const headers = {}
  for (const [k, v] of Object.entries(message.headers || {})) headers[k] = v.toString()
  return {
    partition,
    offset: Number(message.offset),
    key: message.key === null ? null : message.key.toString(),
    value: message.value.toString(),
    timestamp: Number(message.timestamp),
    headers
  }
}

// produce {topic, codec, records: [{key, value, partition?, timestamp?, headers?}]}: one send, acks=all
async function produce (kafka, { topic, codec = 'none', records }) {
  const producer = kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner })
  await producer.connect()
  try {
    const messages = records.map(r => ({
      key: r.key,
      value: r.value,
      partition: r.partition,
      timestamp: r.timestamp === undefined ? undefined : String(r.timestamp),
      headers: r.headers
    }))
    const acks = await producer.send({ topic, messages, acks: -1, compression: CODECS[codec] })
    return acks.map(a => ({ partition: a.partition, errorCode: a.errorCode, baseOffset: Number(a.baseOffset) }))
  } finally {
    await producer.disconnect()
  }
}

// consume {topic, group, count, timeoutMs, readUncommitted}: joins the group, reads count records from the
// committed offsets (else the beginning), commits the next offset of every partition read, describes the
// group while still a member, then leaves it. Fetches are read_committed unless readUncommitted (kafkajs'
// default): records of aborted transactions are dropped, and nothing past a partition's last stable offset.
async function consume (kafka, { topic, group, count, timeoutMs = 60000, readUncommitted = false }) {
  const consumer = kafka.consumer({ groupId: group, sessionTimeout: 10000, rebalanceTimeout: 20000, readUncommitted })
  const records = []
  let finished
  const done = new Promise(resolve => { finished = resolve })
  await consumer.connect()
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true })
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        if (records.length < count) records.push(record(partition, message))
        if (records.length === count) finished()
      }
    })
    const timer = setTimeout(finished, timeoutMs)
    await done
    clearTimeout(timer)
    if (records.length < count) throw new Error(`${records.length} of ${count} records after ${timeoutMs} ms`)
    const next = {}
    for (const r of records) next[r.partition] = Math.max(next[r.partition] || 0, r.offset + 1)
    await consumer.commitOffsets(Object.entries(next).map(
      ([partition, offset]) => ({ topic, partition: Number(partition), offset: String(offset) })))
    const described = await describeGroups(kafka, { groups: [group] })
    return { records, group: described[0] }
  } finally {
    await consumer.disconnect()
  }
}

// The test's side of a paused command: pause writes a JSON line on stdout, then the next line of stdin lets
// it go on; close lets stdin go (the process ends once nothing else is open).
function pauser () {
  const reader = require('readline').createInterface({ input: process.stdin })
  const lines = reader[Symbol.asyncIterator]()
  return {
    pause: async state => {
      process.stdout.write(JSON.stringify(state) + '\n')
      const { done } = await lines.next()
      if (done) throw new Error(`stdin closed while paused at ${JSON.stringify(state)}`)
    },
    close: () => reader.close()
  }
}

// transactions {topic, transactionalId, group, offsetsTopic, transactions: [{records: [{partition, key, value}],
// offsets: [{partition, offset}], commit}], pause}: one transactional producer (InitProducerId, then per
// transaction AddPartitionsToTxn, Produce, AddOffsetsToTxn + TxnOffsetCommit to the group's coordinator, EndTxn)
// runs each transaction in turn, its records to topic, its offsets those of offsetsTopic (the records a
// consume-transform-produce loop read); with pause it stops before each EndTxn until stdin has a line. The
// result is the producer's acks per transaction.
async function transactions (kafka, { topic, transactionalId, group, offsetsTopic, transactions, pause = false }) {
  const producer = kafka.producer({
    transactionalId,
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
    createPartitioner: Partitioners.DefaultPartitioner
  })
  const paused = pause ? pauser() : null
  await producer.connect()
  try {
    const results = []
    for (const [index, { records, offsets, commit }] of transactions.entries()) {
      const txn = await producer.transaction()
      const acks = await txn.send({
        topic,
        messages: records.map(r => ({ key: r.key, value: r.value, partition: r.partition }))
      })
      await txn.sendOffsets({
        consumerGroupId: group,
        topics: [{
          topic: offsetsTopic,
          partitions: offsets.map(o => ({ partition: o.partition, offset: String(o.offset) }))
        }]
      })
      if (paused) await paused.pause({ pending: index })
      await (commit ? txn.commit() : txn.abort())
      results.push({
        commit,
        acks: acks.map(a => ({ partition: a.partition, errorCode: a.errorCode, baseOffset: Number(a.baseOffset) }))
      })
    }
    return { transactions: results }
  } finally {
    if (paused) paused.close()
    await producer.disconnect()
  }
}

async function withAdmin (kafka, action) {
  const admin = kafka.admin()
  await admin.connect()
  try {
    return await action(admin)
  } finally {
    await admin.disconnect()
  }
}

function describeGroups (kafka, { groups }) {
  return withAdmin(kafka, async admin => {
    const described = await admin.describeGroups(groups)
    return described.groups.map(g => ({
      groupId: g.groupId,
      state: g.state,
      protocolType: g.protocolType,
      protocol: g.protocol,
      errorCode: g.errorCode,
      members: g.members.map(m => ({
        memberId: m.memberId,
        clientId: m.clientId,
        assignment: g.protocolType === 'consumer' && m.memberAssignment.length
          ? AssignerProtocol.MemberAssignment.decode(m.memberAssignment).assignment
          : null
      }))
    }))
  })
}

const COMMANDS = {
  produce,
  consume,
  transactions,
  'describe-groups': describeGroups,
  'create-topics': (kafka, { topics }) => withAdmin(kafka, async admin => ({
    created: await admin.createTopics({ topics, waitForLeaders: true, timeout: 30000 })
  })),
  'delete-topics': (kafka, { topics }) => withAdmin(kafka, async admin => {
    await admin.deleteTopics({ topics, timeout: 30000 })
    return { deleted: topics }
  }),
  'list-topics': kafka => withAdmin(kafka, async admin => ({ topics: (await admin.listTopics()).sort() })),
  metadata: (kafka, { topics }) => withAdmin(kafka, admin => admin.fetchTopicMetadata({ topics })),
  'list-groups': kafka => withAdmin(kafka, admin => admin.listGroups()),
  'fetch-offsets': (kafka, { group, topics }) => withAdmin(kafka, admin => admin.fetchOffsets({ groupId: group, topics })),
  'topic-offsets': (kafka, { topic }) => withAdmin(kafka, admin => admin.fetchTopicOffsets(topic))
}

async function main ([brokers, command, args = '{}']) {
  if (!COMMANDS[command]) throw new Error(`usage: node client.js BROKERS (${Object.keys(COMMANDS).join('|')}) JSON`)
  const kafka = new Kafka({
    clientId: 'zkafka-kafkajs',
    brokers: brokers.split(','),
    logLevel: logLevel.WARN,
    logCreator: stderrLog,
    retry: { retries: 8 }
  })
  const result = await COMMANDS[command](kafka, JSON.parse(args))
  process.stdout.write(JSON.stringify(result) + '\n')
}

main(process.argv.slice(2)).catch(err => {
  process.stderr.write(`${err.name}: ${err.message}\n${err.stack}\n`)
  process.exit(1)
})
