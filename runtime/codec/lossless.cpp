// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// lossless.cpp — the lz4 and zstd payloads of a codec frame (Note [Codec frames]).
//
// Note [Lossless payloads are library frames]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// lz4's payload is an LZ4 *frame* (lz4frame.h), not a raw block, and zstd's a zstd frame:
// both record the content size and, with codec_params::checksum, a checksum of the content
// (XXH32 for lz4, XXH64 for zstd) that their decoders verify. A raw LZ4 block has neither,
// so a flipped bit in a literal would decode "successfully" to wrong bytes; a frame turns it
// into codec_failure::corrupt. Both decoders are told the output's exact capacity and never
// write past it; what they refuse, and what decodes to another size, becomes a codec_error.
//
// Decoder and compressor contexts are per thread (thread_local) and reused: creating a zstd
// context allocates, and for the small tensors the pool evicts that would dominate.
#include "codec/frame.hpp"

#include <lz4frame.h>
#include <zstd.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

namespace tierpool::codec_detail {
namespace {

struct lz4_dctx_deleter {
  void operator()(LZ4F_dctx* c) const noexcept { LZ4F_freeDecompressionContext(c); }
};
struct zstd_cctx_deleter {
  void operator()(ZSTD_CCtx* c) const noexcept { ZSTD_freeCCtx(c); }
};
struct zstd_dctx_deleter {
  void operator()(ZSTD_DCtx* c) const noexcept { ZSTD_freeDCtx(c); }
};

LZ4F_preferences_t lz4_prefs(std::size_t bytes, codec_params const& p) noexcept
{
  LZ4F_preferences_t prefs;
  std::memset(&prefs, 0, sizeof(prefs));
  prefs.frameInfo.blockSizeID = LZ4F_max4MB;
  prefs.frameInfo.blockMode = LZ4F_blockIndependent;
  prefs.frameInfo.contentChecksumFlag = p.checksum ? LZ4F_contentChecksumEnabled : LZ4F_noContentChecksum;
  prefs.frameInfo.contentSize = bytes;
  prefs.compressionLevel = p.lz4_high ? p.lz4_hc_level : 0;
  return prefs;
}

// Note [A failed lz4 decode discards its context]
// liblz4 1.9.4's LZ4F_resetDecompressionContext() leaves the bytes a frame still owed
// (frameRemainingSize) as they were, and a frame without a content size field (compress()
// writes none for an empty input) never sets them again: after a decode that failed midway,
// the next empty frame failed with "frameSize_wrong" (found by fuzz/fuzz_codec.cpp). So a
// decode that fails frees the thread's context, and the next one starts from a new one.
std::unique_ptr<LZ4F_dctx, lz4_dctx_deleter>& lz4_dctx_slot() noexcept
{
  thread_local std::unique_ptr<LZ4F_dctx, lz4_dctx_deleter> ctx;
  return ctx;
}

LZ4F_dctx* lz4_dctx()
{
  auto& ctx = lz4_dctx_slot();
  if (!ctx) {
    LZ4F_dctx* c = nullptr;
    if (LZ4F_isError(LZ4F_createDecompressionContext(&c, LZ4F_VERSION))) { throw std::bad_alloc(); }
    ctx.reset(c);
  }
  return ctx.get();
}

[[noreturn]] void lz4_fail(codec_failure f, std::string const& what)
{
  lz4_dctx_slot().reset();  // Note [A failed lz4 decode discards its context]
  fail(f, what);
}

ZSTD_CCtx* zstd_cctx()
{
  thread_local std::unique_ptr<ZSTD_CCtx, zstd_cctx_deleter> ctx{ZSTD_createCCtx()};
  if (!ctx) { throw std::bad_alloc(); }
  return ctx.get();
}

ZSTD_DCtx* zstd_dctx()
{
  thread_local std::unique_ptr<ZSTD_DCtx, zstd_dctx_deleter> ctx{ZSTD_createDCtx()};
  if (!ctx) { throw std::bad_alloc(); }
  return ctx.get();
}

}  // namespace

std::size_t lz4_bound(std::size_t bytes, codec_params const& p)
{
  LZ4F_preferences_t const prefs = lz4_prefs(bytes, p);
  return LZ4F_compressFrameBound(bytes, &prefs);
}

std::size_t lz4_compress(std::span<std::byte const> in, std::span<std::byte> out, codec_params const& p)
{
  LZ4F_preferences_t const prefs = lz4_prefs(in.size(), p);
  std::size_t const n = LZ4F_compressFrame(out.data(), out.size(), in.data(), in.size(), &prefs);
  if (LZ4F_isError(n)) {
    // Only a bound too small or no memory can get here: the caller sized `out` with lz4_bound.
    throw std::runtime_error(std::string("codec lz4: compression failed: ") + LZ4F_getErrorName(n));
  }
  return n;
}

void lz4_decompress(std::span<std::byte const> in, std::span<std::byte> out)
{
  LZ4F_dctx* const ctx = lz4_dctx();
  LZ4F_resetDecompressionContext(ctx);  // a previous call ended at a frame's end (or failed: a new context)
  std::byte dummy{};
  std::byte* const dst = out.empty() ? &dummy : out.data();
  std::size_t src_pos = 0;
  std::size_t dst_pos = 0;
  for (;;) {
    std::size_t dst_len = out.size() - dst_pos;
    std::size_t src_len = in.size() - src_pos;
    std::size_t const hint = LZ4F_decompress(ctx, dst + dst_pos, &dst_len, in.data() + src_pos, &src_len, nullptr);
    if (LZ4F_isError(hint)) {
      lz4_fail(codec_failure::corrupt, std::string("codec lz4: ") + LZ4F_getErrorName(hint));
    }
    src_pos += src_len;
    dst_pos += dst_len;
    if (hint == 0) { break; }  // the frame ended (its checksum verified)
    if (src_len == 0 && dst_len == 0) {
      if (src_pos == in.size()) {
        lz4_fail(codec_failure::truncated, "codec lz4: the frame ends after " + std::to_string(in.size()) +
                                         " bytes, before its end mark (" + std::to_string(dst_pos) + " of " +
                                         std::to_string(out.size()) + " bytes decoded)");
      }
      lz4_fail(codec_failure::size_mismatch, "codec lz4: the frame decodes to more than " + std::to_string(out.size()) +
                                           " bytes");
    }
  }
  if (dst_pos != out.size()) {
    lz4_fail(codec_failure::size_mismatch, "codec lz4: the frame decoded to " + std::to_string(dst_pos) + " bytes, not " +
                                         std::to_string(out.size()));
  }
  if (src_pos != in.size()) {
    lz4_fail(codec_failure::corrupt, "codec lz4: " + std::to_string(in.size() - src_pos) + " bytes after the frame's end");
  }
}

std::size_t zstd_bound(std::size_t bytes)
{
  std::size_t const b = ZSTD_compressBound(bytes);
  return ZSTD_isError(b) != 0U ? 0 : b;  // 0: too large (max_compressed_size refuses it)
}

std::size_t zstd_compress(std::span<std::byte const> in, std::span<std::byte> out, codec_params const& p)
{
  ZSTD_CCtx* const ctx = zstd_cctx();
  ZSTD_CCtx_reset(ctx, ZSTD_reset_session_and_parameters);
  ZSTD_CCtx_setParameter(ctx, ZSTD_c_compressionLevel, p.zstd_level);
  ZSTD_CCtx_setParameter(ctx, ZSTD_c_checksumFlag, p.checksum ? 1 : 0);
  ZSTD_CCtx_setParameter(ctx, ZSTD_c_contentSizeFlag, 1);
  std::size_t const n = ZSTD_compress2(ctx, out.data(), out.size(), in.data(), in.size());
  if (ZSTD_isError(n) != 0U) {
    throw std::runtime_error(std::string("codec zstd: compression failed: ") + ZSTD_getErrorName(n));
  }
  return n;
}

void zstd_decompress(std::span<std::byte const> in, std::span<std::byte> out)
{
  unsigned long long const content = ZSTD_getFrameContentSize(in.data(), in.size());
  if (content == ZSTD_CONTENTSIZE_ERROR) {
    // A bad magic number, or a header cut short (the magic is all there is, or less).
    std::uint32_t magic = 0;
    if (in.size() >= sizeof(magic)) { std::memcpy(&magic, in.data(), sizeof(magic)); }
    if (in.size() < sizeof(magic) || magic == ZSTD_MAGICNUMBER) {
      fail(codec_failure::truncated, "codec zstd: " + std::to_string(in.size()) + " payload bytes hold no whole frame header");
    }
    fail(codec_failure::corrupt, "codec zstd: the payload is not a zstd frame");
  }
  if (content == ZSTD_CONTENTSIZE_UNKNOWN) {
    // compress() always records the content size.
    fail(codec_failure::corrupt, "codec zstd: the frame records no content size");
  }
  if (content != out.size()) {
    fail(codec_failure::size_mismatch, "codec zstd: the frame holds " + std::to_string(content) + " bytes, not " +
                                         std::to_string(out.size()));
  }
  std::size_t const frame = ZSTD_findFrameCompressedSize(in.data(), in.size());
  if (ZSTD_isError(frame) != 0U) {
    fail(codec_failure::truncated, std::string("codec zstd: ") + ZSTD_getErrorName(frame));
  }
  if (frame != in.size()) {
    fail(codec_failure::corrupt, "codec zstd: " + std::to_string(in.size() - frame) + " bytes after the frame's end");
  }
  std::byte dummy{};
  std::size_t const n = ZSTD_decompressDCtx(zstd_dctx(), out.empty() ? &dummy : out.data(), out.size(), in.data(),
                                            in.size());
  if (ZSTD_isError(n) != 0U) { fail(codec_failure::corrupt, std::string("codec zstd: ") + ZSTD_getErrorName(n)); }
  if (n != out.size()) {
    fail(codec_failure::size_mismatch, "codec zstd: the frame decoded to " + std::to_string(n) + " bytes, not " +
                                         std::to_string(out.size()));
  }
}

}  // namespace tierpool::codec_detail
