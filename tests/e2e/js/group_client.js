// kafkajs 2.2 (pinned in package.json) against the Shoal daemon, run by tests/e2e/test_kafkajs_e2e.py.
//   node group_client.js '{"bootstrap": "127.0.0.1:9092", "topic": "t", "group": "g",
//                          "produce": ["v0", ...], "partitions": 3, "consume": 30, "settleMs": 2000}'
// Produces `produce` (the i-th value to partition i % partitions, one send), then joins `group`
// (a classic consumer group: kafkajs's own defaults, autoCommit included) and reads until `consume`
// records came, plus `settleMs` for any extra one, then disconnects (committing what it read).
// Prints one JSON line: {"produced": {value: [partition, offset]}, "consumed": [[partition, offset,
// value], ...], "committed": {partition: offset}} (committed as the admin client reads it back after
// the consumer left). kafkajs's log goes to stderr.
const { Kafka, logLevel } = require('kafkajs')

const spec = JSON.parse(process.argv[2])
const toStderr = () => ({ namespace, level, label, log }) => {
  process.stderr.write(`${label} [${namespace}] ${JSON.stringify(log)}\n`)
}
const kafka = new Kafka({ clientId: 'shoal-e2e', brokers: [spec.bootstrap], logLevel: logLevel.INFO, logCreator: toStderr })

async function produce () {
  const produced = {}
  const values = spec.produce || []
  if (!values.length) return produced
  const producer = kafka.producer()
  await producer.connect()
  const messages = values.map((v, i) => ({ value: v, partition: i % spec.partitions }))
  const meta = await producer.send({ topic: spec.topic, messages })
  const base = {}
  for (const m of meta) base[m.partition] = Number(m.baseOffset)
  const next = {}
  for (const m of messages) {
    next[m.partition] = next[m.partition] === undefined ? base[m.partition] : next[m.partition] + 1
    produced[m.value] = [m.partition, next[m.partition]]
  }
  await producer.disconnect()
  return produced
}

async function consume () {
  const consumed = []
  if (!spec.consume) return consumed
  const consumer = kafka.consumer({ groupId: spec.group })
  await consumer.connect()
  await consumer.subscribe({ topics: [spec.topic], fromBeginning: true })
  let enough
  const done = new Promise((resolve) => { enough = resolve })
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      consumed.push([partition, Number(message.offset), message.value.toString()])
      if (consumed.length >= spec.consume) enough()
    }
  })
  const timer = setTimeout(enough, spec.timeoutMs || 60000)
  await done
  clearTimeout(timer)
  await new Promise((resolve) => setTimeout(resolve, spec.settleMs ?? 2000))
  await consumer.disconnect()
  return consumed
}

async function committed () {
  const admin = kafka.admin()
  await admin.connect()
  const [t] = await admin.fetchOffsets({ groupId: spec.group, topics: [spec.topic] })
  await admin.disconnect()
  const out = {}
  for (const p of t.partitions) out[p.partition] = Number(p.offset)
  return out
}

async function main () {
  const produced = await produce()
  const consumed = await consume()
  const result = { produced, consumed }
  if (spec.consume) result.committed = await committed()
  process.stdout.write(JSON.stringify(result) + '\n')
}

main().then(() => process.exit(0), (err) => {
  process.stderr.write(`${err && err.stack ? err.stack : err}\n`)
  process.exit(1)
})
