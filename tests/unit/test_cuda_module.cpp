// What the cuda module reports without a GPU: it loads wherever cuBLAS and NCCL are found, and
// /system nccl_version gets NCCL's version alone, not the whole CUDA line.
#include <gtest/gtest.h>

#include <cctype>
#include <string>

#include "fob/backend.h"

namespace fob {
namespace {

TEST(CudaModule, NcclVersionIsNcclsAlone) {
  if (!cuda_backend_built() || !cuda_status().loaded) {
    GTEST_SKIP() << "the cuda backend is not built or cannot load here";
  }
  const std::string nccl = nccl_version();
  ASSERT_FALSE(nccl.empty());
  EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(nccl[0]))) << nccl;
  EXPECT_NE(nccl.find("libnccl"), std::string::npos) << nccl;
  EXPECT_EQ(nccl.find("cuBLAS"), std::string::npos) << nccl;
  EXPECT_NE(cuda_versions().find("NCCL " + nccl), std::string::npos) << cuda_versions();
}

}  // namespace
}  // namespace fob
