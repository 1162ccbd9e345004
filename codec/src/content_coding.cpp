// Content-coding names and the Accept-Encoding negotiation.
#include <trellis/codec/http/content_coding.hpp>

#include <array>

#include <trellis/codec/http/http_headers.hpp>

namespace trellis::http {
namespace {

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A qvalue (RFC 9110 §12.4.2): "0", "1", "0.5", "1.000"...; -1 when malformed.
int parse_qvalue_thousandths(std::string_view v) noexcept {
  if (v.empty() || (v[0] != '0' && v[0] != '1')) return -1;
  int q = (v[0] - '0') * 1000;
  if (v.size() == 1) return q;
  if (v[1] != '.' || v.size() > 5) return -1;
  int scale = 100;
  for (std::size_t i = 2; i < v.size(); ++i, scale /= 10) {
    if (v[i] < '0' || v[i] > '9') return -1;
    q += (v[i] - '0') * scale;
  }
  return q > 1000 ? -1 : q;
}

}  // namespace

std::string_view content_coding_name(ContentCoding coding) noexcept {
  switch (coding) {
    case ContentCoding::kGzip:
      return "gzip";
    case ContentCoding::kDeflate:
      return "deflate";
    case ContentCoding::kBrotli:
      return "br";
    case ContentCoding::kZstd:
      return "zstd";
    case ContentCoding::kIdentity:
      break;
  }
  return "identity";
}

std::optional<ContentCoding> parse_content_coding(std::string_view value) noexcept {
  value = trim(value);
  if (iequals(value, "gzip") || iequals(value, "x-gzip")) return ContentCoding::kGzip;
  if (iequals(value, "deflate") || iequals(value, "x-deflate")) return ContentCoding::kDeflate;
  if (iequals(value, "br")) return ContentCoding::kBrotli;
  if (iequals(value, "zstd")) return ContentCoding::kZstd;
  if (iequals(value, "identity")) return ContentCoding::kIdentity;
  return std::nullopt;
}

ContentCoding select_content_coding(std::optional<std::string_view> accept_encoding,
                                    ContentCodings enabled) noexcept {
  if (!accept_encoding) return ContentCoding::kIdentity;
  // q in thousandths per coding (-1: not listed), indexed by ContentCoding; and for "*".
  std::array<int, 5> q{-1, -1, -1, -1, -1};
  int star = -1;
  std::string_view rest = *accept_encoding;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const auto semi = item.find(';');
    const std::string_view name = trim(item.substr(0, semi));
    if (name.empty()) continue;
    int value = 1000;
    if (semi != std::string_view::npos) {
      std::string_view params = item.substr(semi + 1);
      while (!params.empty()) {
        const auto next = params.find(';');
        const std::string_view param = trim(params.substr(0, next));
        params = next == std::string_view::npos ? std::string_view() : params.substr(next + 1);
        const auto eq = param.find('=');
        if (eq != std::string_view::npos && iequals(trim(param.substr(0, eq)), "q")) {
          value = parse_qvalue_thousandths(trim(param.substr(eq + 1)));
        }
      }
    }
    if (value < 0) continue;  // a malformed q: ignore the item
    if (name == "*") {
      star = value;
    } else if (auto coding = parse_content_coding(name)) {
      q[static_cast<std::size_t>(*coding)] = value;
    }
  }
  ContentCoding best = ContentCoding::kIdentity;
  int best_q = 0;
  // In order of preference: a later coding must have a strictly higher q to win.
  const std::array<std::pair<ContentCoding, bool>, 4> order{
      {{ContentCoding::kBrotli, enabled.br},
       {ContentCoding::kZstd, enabled.zstd},
       {ContentCoding::kGzip, enabled.gzip},
       {ContentCoding::kDeflate, enabled.deflate}}};
  for (const auto& [coding, on] : order) {
    if (!on) continue;
    int value = q[static_cast<std::size_t>(coding)];
    if (value < 0) value = star < 0 ? 0 : star;
    if (value > best_q) {
      best = coding;
      best_q = value;
    }
  }
  return best;
}

}  // namespace trellis::http
