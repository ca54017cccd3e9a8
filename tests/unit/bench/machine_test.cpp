#include "tk/bench/machine.h"

#include <gtest/gtest.h>
#include <omp.h>

namespace tk::bench {
namespace {

TEST(Machine, ParsesX86CpuInfo) {
  const char* text =
      "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel\t\t: 1\n"
      "model name\t: AMD EPYC 7763 64-Core Processor\ncpu MHz\t\t: 2445.404\n\n"
      "processor\t: 1\nmodel name\t: AMD EPYC 7763 64-Core Processor\n";
  EXPECT_EQ(parse_cpu_model(text), "AMD EPYC 7763 64-Core Processor");
}

TEST(Machine, ParsesOtherCpuInfoLayouts) {
  EXPECT_EQ(parse_cpu_model("processor\t: 0\nBogoMIPS\t: 50.00\nModel\t\t: Raspberry Pi 4 Model B\n"),
            "Raspberry Pi 4 Model B");
  EXPECT_EQ(parse_cpu_model("processor\t: 0\ncpu\t\t: POWER9, altivec supported\n"),
            "POWER9, altivec supported");
  EXPECT_EQ(parse_cpu_model("processor\t: 0\nBogoMIPS\t: 50.00\n"), "");
  EXPECT_EQ(parse_cpu_model(""), "");
}

TEST(Machine, ParsesMemTotal) {
  EXPECT_EQ(parse_mem_total("MemTotal:       24576000 kB\nMemFree:  1 kB\n"), 24576000ull * 1024);
  EXPECT_EQ(parse_mem_total("MemFree:  1 kB\n"), 0u);
  EXPECT_EQ(parse_mem_total("MemTotal: lots\n"), 0u);
  EXPECT_EQ(parse_mem_total("MemTotal: 99999999999999999999 kB\n"), 0u);  // overflows
}

TEST(Machine, DescribesThisMachine) {
  MachineInfo m = describe_machine();
  EXPECT_FALSE(m.cpu_model.empty());
  EXPECT_GE(m.logical_cpus, 1);
  EXPECT_GE(m.usable_cpus, 1);
  EXPECT_LE(m.usable_cpus, m.logical_cpus);
  EXPECT_EQ(m.omp_threads, omp_get_max_threads());
  EXPECT_GT(m.memory_bytes, 0u);
  EXPECT_EQ(m.kernel.rfind("Linux ", 0), 0u);
  EXPECT_FALSE(m.compiler.empty());
}

}  // namespace
}  // namespace tk::bench
