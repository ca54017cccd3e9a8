// What dist does over any communicator: raise_together (one rank's error becomes every
// rank's, carried as bytes by allgather) and the exchange of known sizes, by default.
#include <cstring>
#include <string>

#include "tk/core/error.h"
#include "tk/dist/comm.h"

namespace tk::dist {

namespace {

void put_text(std::vector<uint8_t>& out, const std::string& text) {
  const uint64_t size = text.size();
  const auto* p = reinterpret_cast<const uint8_t*>(&size);
  out.insert(out.end(), p, p + sizeof size);
  out.insert(out.end(), text.begin(), text.end());
}

std::string take_text(const std::vector<uint8_t>& in, size_t& at) {
  uint64_t size = 0;
  if (in.size() - at < sizeof size) throw internal_error("a rank's error record is truncated");
  std::memcpy(&size, in.data() + at, sizeof size);
  at += sizeof size;
  if (in.size() - at < size) throw internal_error("a rank's error record is truncated");
  std::string text(reinterpret_cast<const char*>(in.data() + at), size);
  at += size;
  return text;
}

}  // namespace

std::vector<std::vector<uint8_t>> Comm::alltoallv(std::vector<std::vector<uint8_t>> to,
                                                  const std::vector<size_t>& from, Clock::time_point deadline) {
  std::vector<std::vector<uint8_t>> got = alltoallv(std::move(to), deadline);
  for (size_t r = 0; r < got.size(); ++r)
    if (r >= from.size() || got[r].size() != from[r]) throw internal_error("alltoallv: a piece of an unexpected size");
  return got;
}

void raise_together(Comm& comm, std::exception_ptr mine, Clock::time_point deadline) {
  // An empty record: no error here; otherwise the kind, the message, the place and the
  // option (tk::Error::option()).
  std::vector<uint8_t> record;
  if (mine) {
    const Error e = error_from(mine);
    record.push_back(static_cast<uint8_t>(e.kind()));
    put_text(record, e.message());
    put_text(record, e.where());
    put_text(record, e.option());
  }
  const std::vector<std::vector<uint8_t>> all = comm.allgather(record, deadline);
  for (const std::vector<uint8_t>& r : all) {
    if (r.empty()) continue;
    size_t at = 1;
    std::string message = take_text(r, at);
    std::string where = take_text(r, at);
    std::string option = take_text(r, at);
    throw Error(static_cast<ErrorKind>(r[0]), std::move(message), std::move(where)).with_option(std::move(option));
  }
}

}  // namespace tk::dist
