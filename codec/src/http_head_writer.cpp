// Message head and chunk serialisation (see http_head_writer.hpp).
#include <trellis/codec/http/http_head_writer.hpp>

#include <charconv>
#include <cstring>

namespace trellis::http {

namespace {
void put_decimal(ByteBuf& out, std::uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.write_string(std::string_view(buf, static_cast<std::size_t>(r.ptr - buf)));
}
}  // namespace

void write_fields(ByteBuf& out, const HttpHeaders& headers) {
  for (const auto field : headers) write_field(out, field.name, field.value);
}

void write_status_line(ByteBuf& out, HttpVersion version, const HttpResponseStatus& status) {
  out.write_string(version.text());
  out.write_string(" ");
  put_decimal(out, status.code);
  out.write_string(" ");
  out.write_string(status.reason_phrase());
  out.write_string("\r\n");
}

void write_field(ByteBuf& out, std::string_view name, std::string_view value) {
  out.ensure_writable(name.size() + value.size() + 4);
  out.write_string(name);
  out.write_string(": ");
  out.write_string(value);
  out.write_string("\r\n");
}

void write_response_head(ByteBuf& out, HttpVersion version, const HttpResponseStatus& status,
                         const HttpHeaders& headers) {
  write_status_line(out, version, status);
  write_fields(out, headers);
  out.write_string("\r\n");
}

void write_request_head(ByteBuf& out, const HttpMethod& method, std::string_view target,
                        HttpVersion version, const HttpHeaders& headers) {
  out.write_string(method.name());
  out.write_string(" ");
  out.write_string(target);
  out.write_string(" ");
  out.write_string(version.text());
  out.write_string("\r\n");
  write_fields(out, headers);
  out.write_string("\r\n");
}

void write_chunk_header(ByteBuf& out, std::uint64_t size) {
  char buf[20];
  auto r = std::to_chars(buf, buf + sizeof buf, size, 16);
  out.write_string(std::string_view(buf, static_cast<std::size_t>(r.ptr - buf)));
  out.write_string("\r\n");
}

void write_chunk_end(ByteBuf& out) { out.write_string("\r\n"); }

void write_last_chunk(ByteBuf& out, const HttpHeaders& trailers) {
  out.write_string("0\r\n");
  write_fields(out, trailers);
  out.write_string("\r\n");
}

namespace {
// Branch-free over the characters, so the compiler can vectorise it.
bool has_cr_lf_nul(std::string_view s) noexcept {
  bool bad = false;
  for (char c : s) bad |= (c == '\r') | (c == '\n') | (c == '\0');
  return bad;
}
}  // namespace

char* put_text(char* out, std::string_view text) noexcept {
  std::memcpy(out, text.data(), text.size());
  return out + text.size();
}

bool has_unsafe_field(const HttpHeaders& headers) noexcept {
  for (const auto field : headers) {
    if (has_cr_lf_nul(field.name) || has_cr_lf_nul(field.value)) return true;
  }
  return false;
}

FieldsSummary summarize_fields(const HttpHeaders& headers) noexcept {
  FieldsSummary summary;
  bool bad = false;
  for (std::size_t i = 0; i < headers.size(); ++i) {
    const auto field = headers[i];
    summary.bytes += field.name.size() + field.value.size() + 4;
    bad |= has_cr_lf_nul(field.name);
    bad |= has_cr_lf_nul(field.value);
    switch (headers.id_at(i)) {
      case HeaderId::kDate:
        summary.has_date = true;
        break;
      case HeaderId::kContentLength:
        summary.has_content_length = true;
        break;
      case HeaderId::kTransferEncoding:
        summary.has_transfer_encoding = true;
        break;
      default:
        break;
    }
  }
  summary.unsafe = bad;
  return summary;
}

char* put_field(char* out, std::string_view name, std::string_view value) noexcept {
  out = put_text(out, name);
  *out++ = ':';
  *out++ = ' ';
  out = put_text(out, value);
  *out++ = '\r';
  *out++ = '\n';
  return out;
}

char* put_fields(char* out, const HttpHeaders& headers) noexcept {
  for (const auto field : headers) out = put_field(out, field.name, field.value);
  return out;
}

}  // namespace trellis::http
