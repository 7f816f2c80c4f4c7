import CRdKafka

/// librdkafka's in-process mock Kafka cluster: real Kafka protocol on 127.0.0.1, with fault
/// injection. Other clients, in this process or others, reach it through `bootstrapServers`.
public final class MockCluster: @unchecked Sendable {
    // The instance the cluster needs for its bookkeeping; destroyed after the cluster.
    private let owner: RDKafkaHandle
    private let cluster: OpaquePointer

    public init(brokers: Int = 1) throws(KafkaError) {
        owner = try RDKafkaHandle(RD_KAFKA_PRODUCER, try RDKafkaConfig(["log_level": "3"]))
        guard let c = rd_kafka_mock_cluster_new(owner.pointer, Int32(brokers)) else {
            throw KafkaError("cannot create the mock cluster")
        }
        cluster = c
    }

    deinit { rd_kafka_mock_cluster_destroy(cluster) }

    /// `HOST:PORT,…` of the brokers.
    public var bootstrapServers: String { String(cString: rd_kafka_mock_cluster_bootstraps(cluster)) }

    public func createTopic(_ name: String, partitions: Int, replicationFactor: Int = 1) throws(KafkaError) {
        try KafkaError.check(rd_kafka_mock_topic_create(cluster, name, Int32(partitions), Int32(replicationFactor)), "create topic \(name)")
    }

    public func setBrokerDown(_ broker: Int32) throws(KafkaError) {
        try KafkaError.check(rd_kafka_mock_broker_set_down(cluster, broker), "broker \(broker) down")
    }

    public func setBrokerUp(_ broker: Int32) throws(KafkaError) {
        try KafkaError.check(rd_kafka_mock_broker_set_up(cluster, broker), "broker \(broker) up")
    }

    public func setPartitionLeader(topic: String, partition: Int32, broker: Int32) throws(KafkaError) {
        try KafkaError.check(rd_kafka_mock_partition_set_leader(cluster, topic, partition, broker), "leader of \(topic)/\(partition)")
    }

    public func setCoordinator(group: String, broker: Int32) throws(KafkaError) {
        try KafkaError.check(rd_kafka_mock_coordinator_set(cluster, "group", group, broker), "coordinator of \(group)")
    }

    public func setRoundTripTime(broker: Int32, milliseconds: Int32) throws(KafkaError) {
        try KafkaError.check(rd_kafka_mock_broker_set_rtt(cluster, broker, milliseconds), "rtt of broker \(broker)")
    }

    /// The Kafka protocol request kinds faults can be injected into.
    public enum Request: Int16, Sendable {
        case produce = 0, fetch = 1, listOffsets = 2, metadata = 3, offsetCommit = 8, offsetFetch = 9
        case findCoordinator = 10, joinGroup = 11, heartbeat = 12, leaveGroup = 13, syncGroup = 14
    }

    /// Makes the next `errors.count` requests of a kind fail with these Kafka error codes, in order.
    public func pushRequestErrors(_ request: Request, _ errors: [Int32]) {
        let codes = errors.map { rd_kafka_resp_err_t(rawValue: $0) }
        codes.withUnsafeBufferPointer { rd_kafka_mock_push_request_errors_array(cluster, request.rawValue, codes.count, $0.baseAddress) }
    }
}

/// Kafka error codes used for fault injection.
public enum KafkaErrorCode {
    public static let notLeaderForPartition: Int32 = 6
    public static let requestTimedOut: Int32 = 7
    public static let notCoordinator: Int32 = 16
    public static let coordinatorLoadInProgress: Int32 = 14
    public static let rebalanceInProgress: Int32 = 27
    /// librdkafka's local "transport failure": the mock broker disconnects the client.
    public static let transport: Int32 = RD_KAFKA_RESP_ERR__TRANSPORT.rawValue
}
