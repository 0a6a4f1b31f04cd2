// What the quantize_model tests share: quantize a file, load the result as an engine or as GGUF.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "gguf/gguf.h"
#include "strata/engine.h"
#include "strata/model_tools.h"

namespace strata::quantize_test {

inline std::unique_ptr<Engine> load(const std::string& path, uint32_t context = 256) {
  EngineOptions options;
  options.model_path = path;
  options.threads = 2;
  options.context = context;
  Result<std::unique_ptr<Engine>> engine = Engine::create(options);
  EXPECT_TRUE(engine.ok()) << engine.error().message;
  return engine.ok() ? std::move(engine).value() : nullptr;
}

inline std::unique_ptr<gguf::File> open_gguf(const std::string& path) {
  Result<std::unique_ptr<gguf::File>> f = gguf::File::open(path);
  EXPECT_TRUE(f.ok()) << f.error().message;
  return f.ok() ? std::move(f).value() : nullptr;
}

inline Result<QuantizeReport> quantize(const std::string& in, const std::string& out,
                                       const std::string& type, int threads = 2,
                                       const std::string& imatrix = "", bool pure = false,
                                       bool allow_requantize = false) {
  QuantizeOptions o;
  o.allow_requantize = allow_requantize;
  o.input_path = in;
  o.output_path = out;
  o.type = type;
  o.threads = threads;
  o.imatrix_path = imatrix;
  o.pure = pure;
  return quantize_model(o);
}

}  // namespace strata::quantize_test
