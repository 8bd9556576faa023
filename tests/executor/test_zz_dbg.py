import time
from executor.harness import cluster_model
from kafka_balancer.kafka.port import LEADER_THROTTLE_RATE
def test_dbg(emulator, connect):
    model = cluster_model(brokers=8, used=5, partitions={"orders": 8})
    cluster = emulator(model)
    port = connect(cluster)
    port.alter_broker_configs({7: {LEADER_THROTTLE_RATE: "5"}})
    cluster.stop_broker(7)
    try:
        port.alter_broker_configs({7: {LEADER_THROTTLE_RATE: None}})
    except Exception as e:
        print("down:", repr(e))
    cluster.start_broker(7)
    for i in range(10):
        try:
            port.alter_broker_configs({7: {LEADER_THROTTLE_RATE: None}})
            print("ok after", i, cluster.state.brokers[7].configs)
            break
        except Exception as e:
            print("err:", repr(e))
            time.sleep(0.5)
