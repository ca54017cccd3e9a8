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
// (JSON has no NaN or infinity). Infinity is reported as the string "inf"/"-inf" when
// `keep_infinity` is set, for fields such as an SQNR where +inf means "exact".
nlohmann::json json_number(double value, bool keep_infinity = false);

// "1 tensor", "5 tensors".
std::string count_noun(uint64_t n, const char* singular, const char* plural);

}  // namespace tk::cli

namespace tk::cli {

// Parse a byte count for a command line: "4096", "64K", "512MiB", "1.5G", "2GB" (K, M,
// G, T with or without "i"/"iB"/"B" are powers of 1024). Throws kUsage naming `flag`
// on anything else.
uint64_t bytes_parse(const std::string& text, const std::string& flag);

}  // namespace tk::cli
