// How numbers and sizes appear in reports: one spelling for every tool.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace tk::cli {

// Byte counts with binary units to one decimal: "512 B", "4.2 KiB", "1.0 MiB", "3.5 GiB".
std::string format_bytes(uint64_t bytes);

// A floating-point value as printf "%.6g"; NaN and infinities as "nan", "inf", "-inf".
std::string format_number(double value);

// A floating-point value for a JSON report: the number, or null when it is not finite
// (JSON has no NaN or infinity; an SQNR of null means "exact"). Always a JSON number or
// null, never a string, so that consumers need no special case.
nlohmann::json json_number(double value);

// "1 tensor", "5 tensors".
std::string count_noun(uint64_t n, const char* singular, const char* plural);

}  // namespace tk::cli

namespace tk::cli {

// Parse a byte count for a command line, units as written: "4096", "600KB" (SI: kB/KB,
// MB, GB, TB are powers of 1000), "512MiB" (IEC: KiB, MiB, GiB, TiB are powers of 1024),
// and the bare letters "64K", "1.5G" as powers of 1024 (as dd and sort read them).
// Throws kUsage naming `flag` on anything else.
uint64_t bytes_parse(const std::string& text, const std::string& flag);

}  // namespace tk::cli
