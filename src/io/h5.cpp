#include "icl/io/h5.hpp"

#include "icl/io/io_stats.hpp"

#include <sys/stat.h>

#include <hdf5.h>

#include <algorithm>
#include <atomic>
#include <type_traits>

namespace icl::io {

static_assert(std::is_same_v<hid_t, int64_t>, "icl::io stores hid_t as int64_t (HDF5 >= 1.10)");

namespace {

// HDF5 otherwise prints its error stack to stderr on every failure, including the
// expected ones (probing, open of a missing file); we report through H5Error instead.
void silence_hdf5() {
  static thread_local const bool done = [] {   // per thread: thread-safe HDF5 keeps an error stack per thread
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)done;
}

// Walking upward visits the most specific (innermost) error first.
herr_t innermost_desc(unsigned, const H5E_error2_t* err, void* out) {
  auto* desc = static_cast<std::string*>(out);
  if (desc->empty() && err->desc != nullptr) *desc = err->desc;
  return 0;
}

[[noreturn]] void fail(const std::string& what, const std::string& ctx) {
  throw H5Error(what + " (" + ctx + ")");
}

// Must run before any other HDF5 call, which would clear the error stack.
[[noreturn]] void fail_call(const char* call, const std::string& ctx) {
  std::string detail;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, innermost_desc, &detail);
  fail(std::string(call) + " failed" + (detail.empty() ? "" : ": " + detail), ctx);
}

template <class T>
T check(T result, const char* call, const std::string& ctx) {
  if (result < 0) fail_call(call, ctx);
  return result;
}

Object own(hid_t id, const char* call, const std::string& ctx) {
  return Object(check(id, call, ctx));
}

std::string where(const File& f, const std::string& path) {
  return "file '" + f.path() + "', object '" + path + "'";
}

std::string where(const File& f, const std::string& path, const std::string& attr) {
  return where(f, path) + ", attribute '" + attr + "'";
}

std::vector<hsize_t> to_hsize(const std::vector<uint64_t>& v) {
  return std::vector<hsize_t>(v.begin(), v.end());
}

uint64_t product(std::vector<uint64_t>::const_iterator first, std::vector<uint64_t>::const_iterator last) {
  uint64_t n = 1;
  for (; first != last; ++first) n *= *first;
  return n;
}

Object simple_space(const std::vector<uint64_t>& dims, const std::string& ctx) {
  if (dims.empty() || dims.size() > H5S_MAX_RANK) fail("invalid dataspace rank", ctx);
  const auto d = to_hsize(dims);
  return own(H5Screate_simple(static_cast<int>(d.size()), d.data(), nullptr), "H5Screate_simple", ctx);
}

std::vector<uint64_t> shape_of(const Object& space, const std::string& ctx) {
  const int rank = check(H5Sget_simple_extent_ndims(space.id()), "H5Sget_simple_extent_ndims", ctx);
  std::vector<hsize_t> d(static_cast<size_t>(rank));
  check(H5Sget_simple_extent_dims(space.id(), d.data(), nullptr), "H5Sget_simple_extent_dims", ctx);
  return std::vector<uint64_t>(d.begin(), d.end());
}

size_t npoints(const Object& space, const std::string& ctx) {
  return static_cast<size_t>(
      check(H5Sget_simple_extent_npoints(space.id()), "H5Sget_simple_extent_npoints", ctx));
}

Object vlen_string_type(const std::string& ctx) {
  Object t = own(H5Tcopy(H5T_C_S1), "H5Tcopy", ctx);
  check(H5Tset_size(t.id(), H5T_VARIABLE), "H5Tset_size", ctx);
  check(H5Tset_cset(t.id(), H5T_CSET_UTF8), "H5Tset_cset", ctx);
  return t;
}

Object intermediate_lcpl(const std::string& ctx) {
  Object p = own(H5Pcreate(H5P_LINK_CREATE), "H5Pcreate", ctx);
  check(H5Pset_create_intermediate_group(p.id(), 1), "H5Pset_create_intermediate_group", ctx);
  return p;
}

Object open_dataset(const File& f, const std::string& path, const std::string& ctx) {
  return own(H5Dopen2(f.id(), path.c_str(), H5P_DEFAULT), "H5Dopen2", ctx);
}

void write_dataset(File& f, const std::string& path, hid_t file_type, hid_t mem_type, const void* data,
                   size_t n, std::vector<uint64_t> dims) {
  const std::string ctx = where(f, path);
  if (dims.empty()) dims = {n};
  if (product(dims.begin(), dims.end()) != n)
    fail("dims do not multiply to the number of elements (" + std::to_string(n) + ")", ctx);
  Object space = simple_space(dims, ctx);
  Object lcpl = intermediate_lcpl(ctx);
  // Numbers are chunked with HDF5's Fletcher32 checksum: a damaged chunk fails to read (here, in h5py,
  // anywhere) instead of returning other values.  Chunks of about 1 MiB along the first dimension.
  Object dcpl = own(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate", ctx);
  if (n > 0 && H5Tget_class(file_type) != H5T_STRING) {   // (HDF5 filters cannot take variable-length data)
    std::vector<hsize_t> chunk = to_hsize(dims);
    const uint64_t row_bytes = product(dims.begin() + 1, dims.end()) * H5Tget_size(file_type);
    chunk[0] = std::max<hsize_t>(1, std::min<hsize_t>(dims[0], (1u << 20) / std::max<uint64_t>(row_bytes, 1)));
    check(H5Pset_chunk(dcpl.id(), static_cast<int>(chunk.size()), chunk.data()), "H5Pset_chunk", ctx);
    check(H5Pset_fletcher32(dcpl.id()), "H5Pset_fletcher32", ctx);
  }
  Object ds =
      own(H5Dcreate2(f.id(), path.c_str(), file_type, space.id(), lcpl.id(), dcpl.id(), H5P_DEFAULT),
          "H5Dcreate2", ctx);
  // HDF5 rejects a null buffer even for zero elements, and empty vectors may have one.
  if (n > 0) check(H5Dwrite(ds.id(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), "H5Dwrite", ctx);
}

template <class T>
std::vector<T> read_dataset(const File& f, const std::string& path, hid_t mem_type,
                            std::vector<uint64_t>* dims) {
  const std::string ctx = where(f, path);
  Object ds = open_dataset(f, path, ctx);
  Object space = own(H5Dget_space(ds.id()), "H5Dget_space", ctx);
  std::vector<T> out(npoints(space, ctx));
  if (!out.empty())
    check(H5Dread(ds.id(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()), "H5Dread", ctx);
  if (dims) *dims = shape_of(space, ctx);
  return out;
}

// Variable-length strings only; `read(mem_type, buffer)` fills the n elements.
template <class Read>
std::vector<std::string> read_vlen_strings(size_t n, Read&& read, const std::string& ctx) {
  Object mem_type = vlen_string_type(ctx);
  std::vector<char*> buf(n, nullptr);
  // HDF5 allocates each string; free them even if a later step throws.
  struct Release {
    std::vector<char*>& b;
    ~Release() {
      for (char* p : b)
        if (p) H5free_memory(p);
    }
  } release{buf};
  if (n > 0) read(mem_type.id(), buf.data());
  std::vector<std::string> out;
  out.reserve(n);
  for (const char* p : buf) out.emplace_back(p ? p : "");  // unwritten elements are null
  return out;
}

std::vector<const char*> c_strs(const std::vector<std::string>& v) {
  std::vector<const char*> out;
  out.reserve(v.size());
  for (const auto& s : v) out.push_back(s.c_str());
  return out;
}

// A scalar attribute, replacing any of the same name.
void write_attr(File& f, const std::string& obj_path, const std::string& name, hid_t file_type,
                hid_t mem_type, const void* data) {
  const std::string ctx = where(f, obj_path, name);
  Object space = own(H5Screate(H5S_SCALAR), "H5Screate", ctx);
  const char* obj = obj_path.c_str();
  if (check(H5Aexists_by_name(f.id(), obj, name.c_str(), H5P_DEFAULT), "H5Aexists_by_name", ctx) > 0)
    check(H5Adelete_by_name(f.id(), obj, name.c_str(), H5P_DEFAULT), "H5Adelete_by_name", ctx);
  Object attr = own(H5Acreate_by_name(f.id(), obj, name.c_str(), file_type, space.id(), H5P_DEFAULT,
                                      H5P_DEFAULT, H5P_DEFAULT),
                    "H5Acreate_by_name", ctx);
  check(H5Awrite(attr.id(), mem_type, data), "H5Awrite", ctx);
}

Object open_attr(const File& f, const std::string& obj_path, const std::string& name,
                 const std::string& ctx) {
  return own(H5Aopen_by_name(f.id(), obj_path.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT),
             "H5Aopen_by_name", ctx);
}

template <class T>
std::vector<T> read_attr(const File& f, const std::string& obj_path, const std::string& name,
                         hid_t mem_type) {
  const std::string ctx = where(f, obj_path, name);
  Object attr = open_attr(f, obj_path, name, ctx);
  Object space = own(H5Aget_space(attr.id()), "H5Aget_space", ctx);
  std::vector<T> out(npoints(space, ctx));
  if (!out.empty()) check(H5Aread(attr.id(), mem_type, out.data()), "H5Aread", ctx);
  return out;
}

template <class T>
T single(std::vector<T> v, const File& f, const std::string& obj_path, const std::string& name) {
  if (v.size() != 1) fail("attribute does not hold exactly one value", where(f, obj_path, name));
  return v[0];
}

hid_t open_file(const std::string& path, bool create, unsigned flags) {
  silence_hdf5();
  const std::string ctx = "file '" + path + "'";
  if (create) {
    // The 1.8+ file format: compact and indexed link storage makes thousands of per-point groups cheap.
    // Readable by HDF5 1.8 and later (h5py, pandas, MATLAB R2011+).
    Object fapl = own(H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate", ctx);
    check(H5Pset_libver_bounds(static_cast<hid_t>(fapl.id()), H5F_LIBVER_V18, H5F_LIBVER_LATEST), "H5Pset_libver_bounds", ctx);
    return check(H5Fcreate(path.c_str(), flags, H5P_DEFAULT, static_cast<hid_t>(fapl.id())), "H5Fcreate", ctx);
  }
  // HDF5 would block in open(2) on a FIFO (status or verify of a FIFO named OUT.h5 hung): only a regular
  // file (or a missing one, which H5Fopen reports) reaches it.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    fail(std::string("is ") + (S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO" : "not a regular file") +
             ": a results file is a regular HDF5 file", ctx);
  return check(H5Fopen(path.c_str(), flags, H5P_DEFAULT), "H5Fopen", ctx);
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (begin <= path.size()) {
    const size_t end = std::min(path.find('/', begin), path.size());
    if (end > begin) parts.push_back(path.substr(begin, end - begin));
    begin = end + 1;
  }
  return parts;
}

}  // namespace

// H5Fclose; on failure (a full disk) HDF5 1.10 keeps the file half-closed and crashes on it in its
// clean-up at exit (SIGSEGV in H5F__close_cb), so the failure is remembered: the process must then
// end without that clean-up (hdf5_unclean, main.cpp).  Returns "" or HDF5's innermost message.
std::atomic<bool> g_close_failed{false};

static std::string close_file(hid_t id) {
  if (H5Fclose(id) >= 0) return "";
  g_close_failed.store(true);
  std::string detail;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, innermost_desc, &detail);
  return detail.empty() ? "close failed" : detail;
}

bool hdf5_unclean() { return g_close_failed.load(); }

// --- Object ---------------------------------------------------------------

Object::Object(Object&& other) noexcept : id_(other.release()) {}

Object& Object::operator=(Object&& other) noexcept {
  if (this != &other) {
    Object old(id_);
    id_ = other.release();
  }
  return *this;
}

Object::~Object() {
  if (id_ < 0) return;
  switch (H5Iget_type(id_)) {
    case H5I_FILE: close_file(id_); break;
    case H5I_GROUP: H5Gclose(id_); break;
    case H5I_DATASET: H5Dclose(id_); break;
    case H5I_ATTR: H5Aclose(id_); break;
    case H5I_DATASPACE: H5Sclose(id_); break;
    case H5I_DATATYPE: H5Tclose(id_); break;
    case H5I_GENPROP_LST: H5Pclose(id_); break;
    default: break;
  }
}

int64_t Object::release() noexcept {
  return std::exchange(id_, -1);
}

// --- File -----------------------------------------------------------------

File File::create_truncate(const std::string& path) {
  return File(open_file(path, true, H5F_ACC_TRUNC), path);
}

File File::open_read(const std::string& path) {
  return File(open_file(path, false, H5F_ACC_RDONLY), path);
}

File File::open_write(const std::string& path) {
  return File(open_file(path, false, H5F_ACC_RDWR), path);
}

void File::close() {
  if (!valid()) return;
  const std::string why = close_file(static_cast<hid_t>(release()));
  if (!why.empty()) fail("H5Fclose failed: " + why, "file '" + path_ + "'");
}

// --- Objects and groups ---------------------------------------------------

bool exists(const File& f, const std::string& path) {
  const std::string ctx = where(f, path);
  const std::vector<std::string> parts = split_path(path);
  std::string prefix;
  for (size_t i = 0; i < parts.size(); ++i) {
    prefix += "/" + parts[i];
    const char* p = prefix.c_str();
    if (check(H5Lexists(f.id(), p, H5P_DEFAULT), "H5Lexists", ctx) <= 0) return false;
    // A dangling soft link exists as a link but not as an object.
    if (check(H5Oexists_by_name(f.id(), p, H5P_DEFAULT), "H5Oexists_by_name", ctx) <= 0) return false;
    if (i + 1 < parts.size()) {
      Object obj = own(H5Oopen(f.id(), p, H5P_DEFAULT), "H5Oopen", ctx);
      if (H5Iget_type(obj.id()) != H5I_GROUP) return false;
    }
  }
  return true;
}

std::vector<std::string> list(const File& f, const std::string& group_path) {
  const std::string ctx = where(f, group_path);
  Object group = own(H5Gopen2(f.id(), group_path.c_str(), H5P_DEFAULT), "H5Gopen2", ctx);
  std::vector<std::string> names;
  const auto add = [](hid_t, const char* name, const H5L_info_t*, void* out) -> herr_t {
    static_cast<std::vector<std::string>*>(out)->push_back(name);
    return 0;
  };
  io_stats().hdf5_calls += 1;
  // One iteration over the name index (H5Lget_name_by_idx per entry is quadratic in the group's size).
  check(H5Literate(group.id(), H5_INDEX_NAME, H5_ITER_INC, nullptr, add, &names), "H5Literate", ctx);
  std::sort(names.begin(), names.end());
  return names;
}

// --- Datasets of rows ---------------------------------------------------------

namespace {

Object text_type(uint64_t bytes, const std::string& ctx) {
  Object t = own(H5Tcopy(H5T_C_S1), "H5Tcopy", ctx);
  check(H5Tset_size(t.id(), std::max<uint64_t>(bytes, 1)), "H5Tset_size", ctx);
  check(H5Tset_strpad(t.id(), H5T_STR_NULLPAD), "H5Tset_strpad", ctx);
  check(H5Tset_cset(t.id(), H5T_CSET_UTF8), "H5Tset_cset", ctx);
  return t;
}

// The file offset of rows [first, first + n) as a hyperslab of `space` (all columns).
void select_rows(const Object& space, uint64_t first, uint64_t n, uint64_t width, const std::string& ctx) {
  // A one-dimensional space reads only the first entry of each array.
  const hsize_t start[2] = {first, 0}, count[2] = {n, std::max<uint64_t>(width, 1)};
  check(H5Sselect_hyperslab(space.id(), H5S_SELECT_SET, start, nullptr, count, nullptr), "H5Sselect_hyperslab", ctx);
}

Object memory_space(uint64_t n, uint64_t width, const std::string& ctx) {
  return width ? simple_space({n, width}, ctx) : simple_space({n}, ctx);
}

}  // namespace

Rows Rows::create(File& f, const std::string& path, Type type, uint64_t rows, uint64_t width, uint64_t text_bytes) {
  const std::string ctx = icl::io::where(f, path);
  Object file_type = type == Type::text ? text_type(text_bytes, ctx)
                                        : Object(check(H5Tcopy(type == Type::i64 ? H5T_STD_I64LE : H5T_IEEE_F64LE), "H5Tcopy", ctx));
  std::vector<uint64_t> dims = width ? std::vector<uint64_t>{rows, width} : std::vector<uint64_t>{rows};
  Object space = simple_space(dims, ctx);
  Object lcpl = intermediate_lcpl(ctx);
  Object dcpl = own(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate", ctx);
  if (rows > 0) {
    // Chunks of about 1 MiB (at most 2^16 rows): a block of rows is whole chunks, the cache holds one.
    const uint64_t row_bytes = std::max<uint64_t>(1, std::max<uint64_t>(width, 1) * H5Tget_size(file_type.id()));
    uint64_t chunk_rows = 1;
    while (chunk_rows < 65536 && chunk_rows * 2 * row_bytes <= (1u << 20)) chunk_rows *= 2;
    std::vector<hsize_t> chunk = to_hsize(dims);
    chunk[0] = std::min<hsize_t>(rows, chunk_rows);
    check(H5Pset_chunk(dcpl.id(), static_cast<int>(chunk.size()), chunk.data()), "H5Pset_chunk", ctx);
    check(H5Pset_shuffle(dcpl.id()), "H5Pset_shuffle", ctx);
    check(H5Pset_deflate(dcpl.id(), 1), "H5Pset_deflate", ctx);
    check(H5Pset_fletcher32(dcpl.id()), "H5Pset_fletcher32", ctx);
    check(H5Pset_fill_time(dcpl.id(), H5D_FILL_TIME_NEVER), "H5Pset_fill_time", ctx);   // every row is written
  }
  Rows r(check(H5Dcreate2(f.id(), path.c_str(), file_type.id(), space.id(), lcpl.id(), dcpl.id(), H5P_DEFAULT), "H5Dcreate2", ctx),
         path, ctx);
  r.describe();
  return r;
}

Rows Rows::open(const File& f, const std::string& path) {
  const std::string ctx = icl::io::where(f, path);
  Rows r(check(H5Dopen2(f.id(), path.c_str(), H5P_DEFAULT), "H5Dopen2", ctx), path, ctx);
  r.describe();
  return r;
}

void Rows::describe() {
  io_stats().hdf5_calls += 1;
  Object space = own(H5Dget_space(id()), "H5Dget_space", where_);
  const std::vector<uint64_t> dims = shape_of(space, where_);
  if (dims.empty() || dims.size() > 2 || (dims.size() == 2 && dims[1] == 0))
    fail("not a dataset of rows (shape of rank " + std::to_string(dims.size()) + ", or no columns)", where_);
  rows_ = dims[0];
  width_ = dims.size() == 2 ? dims[1] : 0;
  Object stored = own(H5Dget_type(id()), "H5Dget_type", where_);
  switch (H5Tget_class(stored.id())) {
    case H5T_INTEGER:
      type_ = Type::i64;
      mem_type_owner_ = own(H5Tcopy(H5T_STD_I64LE), "H5Tcopy", where_);
      break;
    case H5T_FLOAT:
      type_ = Type::f64;
      mem_type_owner_ = own(H5Tcopy(H5T_IEEE_F64LE), "H5Tcopy", where_);
      break;
    case H5T_STRING:
      if (H5Tis_variable_str(stored.id()) > 0) fail("a variable-length string dataset (format 1): not a dataset of rows", where_);
      type_ = Type::text;
      mem_type_owner_ = text_type(H5Tget_size(stored.id()), where_);
      break;
    default: fail("not a numeric or text dataset", where_);
  }
  mem_type_ = mem_type_owner_.id();
  row_bytes_ = std::max<uint64_t>(width_, 1) * H5Tget_size(static_cast<hid_t>(mem_type_));
}

// The file and memory spaces of rows [first, first + n).
std::pair<Object, Object> Rows::spaces(uint64_t first, uint64_t n) const {
  io_stats().hdf5_calls += 1;
  if (first + n > rows_) fail("rows " + std::to_string(first) + ".." + std::to_string(first + n) + " beyond " + std::to_string(rows_), where_);
  Object file_space = own(H5Dget_space(id()), "H5Dget_space", where_);
  select_rows(file_space, first, n, width_, where_);
  return {std::move(file_space), memory_space(n, width_, where_)};
}

void Rows::write(uint64_t first, uint64_t n, const void* data) {
  if (n == 0) return;
  io_stats().rows_written += static_cast<int64_t>(n);
  const auto [file_space, mem] = spaces(first, n);
  check(H5Dwrite(id(), static_cast<hid_t>(mem_type_), mem.id(), file_space.id(), H5P_DEFAULT, data), "H5Dwrite", where_);
}

void Rows::read(uint64_t first, uint64_t n, void* data) const {
  if (n == 0) return;
  io_stats().rows_read += static_cast<int64_t>(n);
  const auto [file_space, mem] = spaces(first, n);
  check(H5Dread(id(), static_cast<hid_t>(mem_type_), mem.id(), file_space.id(), H5P_DEFAULT, data), "H5Dread", where_);
}

// --- Whole datasets ---------------------------------------------------------

void write(File& f, const std::string& path, const std::vector<double>& v, std::vector<uint64_t> dims) {
  write_dataset(f, path, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, v.data(), v.size(), std::move(dims));
}

void write(File& f, const std::string& path, const std::vector<int64_t>& v, std::vector<uint64_t> dims) {
  write_dataset(f, path, H5T_STD_I64LE, H5T_NATIVE_INT64, v.data(), v.size(), std::move(dims));
}

void write(File& f, const std::string& path, const std::vector<std::string>& v, std::vector<uint64_t> dims) {
  Object type = vlen_string_type(where(f, path));
  write_dataset(f, path, type.id(), type.id(), c_strs(v).data(), v.size(), std::move(dims));
}

std::vector<double> read_double(const File& f, const std::string& path, std::vector<uint64_t>* dims) {
  return read_dataset<double>(f, path, H5T_NATIVE_DOUBLE, dims);
}

std::vector<int64_t> read_int64(const File& f, const std::string& path, std::vector<uint64_t>* dims) {
  return read_dataset<int64_t>(f, path, H5T_NATIVE_INT64, dims);
}

std::vector<std::string> read_strings(const File& f, const std::string& path, std::vector<uint64_t>* dims) {
  const std::string ctx = where(f, path);
  Object ds = open_dataset(f, path, ctx);
  Object space = own(H5Dget_space(ds.id()), "H5Dget_space", ctx);
  auto out = read_vlen_strings(
      npoints(space, ctx),
      [&](hid_t mem_type, void* buf) {
        check(H5Dread(ds.id(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf), "H5Dread", ctx);
      },
      ctx);
  if (dims) *dims = shape_of(space, ctx);
  return out;
}

// --- Attributes -------------------------------------------------------------

void set_attr(File& f, const std::string& obj_path, const std::string& name, const std::string& value) {
  Object type = vlen_string_type(where(f, obj_path, name));
  const char* ptr = value.c_str();
  write_attr(f, obj_path, name, type.id(), type.id(), &ptr);
}

void set_attr(File& f, const std::string& obj_path, const std::string& name, int64_t value) {
  write_attr(f, obj_path, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
}

Type dataset_type(const File& f, const std::string& path) {
  const std::string ctx = where(f, path);
  Object ds = open_dataset(f, path, ctx);
  Object type = own(H5Dget_type(ds.id()), "H5Dget_type", ctx);
  switch (H5Tget_class(type.id())) {
    case H5T_INTEGER: return Type::i64;
    case H5T_FLOAT: return H5Tget_size(type.id()) == 4 ? Type::f32 : Type::f64;
    case H5T_STRING: return H5Tis_variable_str(type.id()) > 0 ? Type::str : Type::text;
    default: fail("not a numeric or string dataset", ctx);
  }
}

std::vector<std::string> attr_names(const File& f, const std::string& obj_path) {
  const std::string ctx = where(f, obj_path);
  Object obj = own(H5Oopen(f.id(), obj_path.c_str(), H5P_DEFAULT), "H5Oopen", ctx);
  std::vector<std::string> names;
  const auto add = [](hid_t, const char* name, const H5A_info_t*, void* out) -> herr_t {
    static_cast<std::vector<std::string>*>(out)->push_back(name);
    return 0;
  };
  check(H5Aiterate2(obj.id(), H5_INDEX_NAME, H5_ITER_INC, nullptr, add, &names), "H5Aiterate2", ctx);
  return names;
}

bool attr_is_string(const File& f, const std::string& obj_path, const std::string& name) {
  const std::string ctx = where(f, obj_path, name);
  Object attr = open_attr(f, obj_path, name, ctx);
  Object type = own(H5Aget_type(attr.id()), "H5Aget_type", ctx);
  return H5Tget_class(type.id()) == H5T_STRING;
}

bool has_attr(const File& f, const std::string& obj_path, const std::string& name) {
  return check(H5Aexists_by_name(f.id(), obj_path.c_str(), name.c_str(), H5P_DEFAULT), "H5Aexists_by_name",
               where(f, obj_path, name)) > 0;
}

std::string get_attr_string(const File& f, const std::string& obj_path, const std::string& name) {
  const std::string ctx = where(f, obj_path, name);
  Object attr = open_attr(f, obj_path, name, ctx);
  Object space = own(H5Aget_space(attr.id()), "H5Aget_space", ctx);
  auto values = read_vlen_strings(
      npoints(space, ctx),
      [&](hid_t mem_type, void* buf) { check(H5Aread(attr.id(), mem_type, buf), "H5Aread", ctx); }, ctx);
  return single(std::move(values), f, obj_path, name);
}

int64_t get_attr_int64(const File& f, const std::string& obj_path, const std::string& name) {
  return single(read_attr<int64_t>(f, obj_path, name, H5T_NATIVE_INT64), f, obj_path, name);
}

}  // namespace icl::io
