#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sys/host.h"

using namespace schedhot;

TEST(Host, ReadsFixtureTree) {
  HostInfo h = read_host_info(std::string(SCHEDHOT_FIXTURES) + "/host4");
  EXPECT_EQ(h.hostname, "fixture4");
  EXPECT_EQ(h.kernel_release, "6.1.0-57-cloud-amd64");
  EXPECT_EQ(h.possible_cpus, 8);
  EXPECT_EQ(h.online, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(h.cacheline_bytes, 64);
  ASSERT_EQ(h.topology.size(), 4u);
  EXPECT_EQ(h.topology[2].package, 0);
  EXPECT_EQ(h.topology[2].core, 1);
  EXPECT_EQ(h.topology[3].llc, 1) << "from cache/index3/id";
  EXPECT_EQ(h.topology[3].node, 1);
  EXPECT_FALSE(h.arat);
  EXPECT_TRUE(h.hypervisor);
  EXPECT_EQ(h.cpuidle_driver, "acpi_idle");
  EXPECT_EQ(h.broadcast_device, "hpet");
  EXPECT_EQ(h.broadcast_mask, "f");
  EXPECT_EQ(h.broadcast_oneshot_mask, "5");
}

TEST(Host, JsonRoundTrip) {
  HostInfo h = read_host_info(std::string(SCHEDHOT_FIXTURES) + "/host4");
  h.spinlock = SpinlockMode::virt_spin_lock;
  nlohmann::json j = h;
  HostInfo g = j.get<HostInfo>();
  EXPECT_EQ(g.online, h.online);
  EXPECT_EQ(g.topology.size(), h.topology.size());
  EXPECT_EQ(g.topology[3].node, 1);
  EXPECT_EQ(g.spinlock, SpinlockMode::virt_spin_lock);
  EXPECT_NE(spinlock_blind_spot(g).find("emits no contention events at all"), std::string::npos);
}

TEST(Host, ReadsTheOnlineCpusForEachSample) {
  EXPECT_EQ(read_online_cpus(std::string(SCHEDHOT_FIXTURES) + "/host4"), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(read_online_cpus("/nonexistent").empty());
}

TEST(Host, NamesTheHypervisorFromItsCpuidSignature) {
  EXPECT_EQ(hypervisor_name("TCGTCGTCGTCG"), "QEMU TCG");
  EXPECT_EQ(hypervisor_name("KVMKVMKVM"), "KVM");
  EXPECT_EQ(hypervisor_name("Microsoft Hv"), "Hyper-V");
  EXPECT_EQ(hypervisor_name(""), "bare metal");
  EXPECT_EQ(hypervisor_name("yes"), "hypervisor");
  EXPECT_EQ(hypervisor_name("SomethingNew"), "SomethingNew") << "an unknown signature is shown as recorded";
}
