// Thin, checked RAII layer over the HDF5 C API: the only code in icl-sweep that calls HDF5.
//
// Every HDF5 call is checked; failures throw H5Error naming the call, the file,
// the object path and (where relevant) the attribute, plus HDF5's innermost
// error message. Paths are slash-separated and resolved from the file root.
// Writers take File&, readers const File&. hid_t is kept out of this header: handles
// store it as int64_t.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "icl/io/io_error.hpp"

namespace icl::io {

class H5Error : public IoError {
 public:
  using IoError::IoError;
};

// True once a file failed to close (a full disk): HDF5 1.10 would then crash in its clean-up at exit,
// so the program must end with _exit after flushing its output.
bool hdf5_unclean();

// Owning, move-only handle for any HDF5 id (file, group, dataset, space, ...).
class Object {
 public:
  // Adopts `id` (negative means empty); it is closed on destruction.
  explicit Object(int64_t id = -1) noexcept : id_(id) {}
  Object(Object&& other) noexcept;
  Object& operator=(Object&& other) noexcept;
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;
  // Closes the id, ignoring errors: destructors must not throw.
  ~Object();

  int64_t id() const noexcept { return id_; }
  bool valid() const noexcept { return id_ >= 0; }

 protected:
  // Gives up ownership without closing.
  int64_t release() noexcept;

 private:
  int64_t id_;
};

// An open HDF5 file; all object paths below are resolved from its root "/".
class File : public Object {
 public:
  // Creates a new file, truncating any existing one.
  static File create_truncate(const std::string& path);
  // Opens an existing file read-only.
  static File open_read(const std::string& path);
  // Opens an existing file for writing in place (tests that damage files; results are never written so).
  static File open_write(const std::string& path);

  // Closes now and throws on failure (the destructor swallows close errors).
  void close();
  const std::string& path() const noexcept { return path_; }

 private:
  File(int64_t id, std::string path) noexcept : Object(id), path_(std::move(path)) {}
  std::string path_;
};

// Element type of a stored dataset (dataset_type): str is a variable-length string, text a fixed-length one.
enum class Type { f64, f32, i64, str, text };

// --- Objects and groups ---------------------------------------------------

// True if every component of `path` exists (non-final ones as groups); never throws for missing.
bool exists(const File& f, const std::string& path);
// Names of the children of group `group_path`, sorted by name (one pass over the group's name index).
std::vector<std::string> list(const File& f, const std::string& group_path);

// --- Datasets of rows, written and read in blocks -------------------------------------
// rows x width elements (width 0: one-dimensional), chunked along the rows, every chunk with HDF5's
// Fletcher32 checksum (a damaged chunk fails to read here, in h5py, anywhere) and compressed (shuffle,
// deflate 1). Element types: f64, i64 (little-endian) or text (fixed-length, `text_bytes` each,
// NUL-padded UTF-8); data are row-major in that stored form, so a row's bytes are what the file holds.
class Rows : public Object {
 public:
  static Rows create(File& f, const std::string& path, Type type, uint64_t rows, uint64_t width, uint64_t text_bytes = 0);
  static Rows open(const File& f, const std::string& path);
  void write(uint64_t first, uint64_t n, const void* data);
  void read(uint64_t first, uint64_t n, void* data) const;
  uint64_t rows() const { return rows_; }
  uint64_t width() const { return width_; }   // 0 for a one-dimensional dataset
  uint64_t row_bytes() const { return row_bytes_; }
  Type type() const { return type_; }
  const std::string& path() const { return path_; }
  const std::string& where() const { return where_; }   // file and path, for messages

 private:
  Rows(int64_t id, std::string path, std::string where) : Object(id), path_(std::move(path)), where_(std::move(where)) {}
  void describe();   // rows_, width_, row_bytes_, type_ from the stored dataset
  std::pair<Object, Object> spaces(uint64_t first, uint64_t n) const;
  std::string path_, where_;
  uint64_t rows_ = 0, width_ = 0, row_bytes_ = 0;
  Type type_ = Type::f64;
  int64_t mem_type_ = -1;   // owned by mem_type_owner_
  Object mem_type_owner_;
};

// --- Whole datasets (created with missing parent groups; throw if `path` exists) ---
// `dims` defaults to {v.size()}, must multiply to v.size(); data is row-major.

void write(File& f, const std::string& path, const std::vector<double>& v, std::vector<uint64_t> dims = {});
void write(File& f, const std::string& path, const std::vector<int64_t>& v, std::vector<uint64_t> dims = {});
// Stored as variable-length UTF-8 strings.
void write(File& f, const std::string& path, const std::vector<std::string>& v,
           std::vector<uint64_t> dims = {});

// The stored element type of a dataset (any integer reads as i64).
Type dataset_type(const File& f, const std::string& path);

// Reads any integer/float dataset converted to double, row-major; shape goes to *dims if given.
std::vector<double> read_double(const File& f, const std::string& path,
                                std::vector<uint64_t>* dims = nullptr);
// Reads any integer/float dataset converted to int64 (HDF5 conversion rules).
std::vector<int64_t> read_int64(const File& f, const std::string& path,
                                std::vector<uint64_t>* dims = nullptr);
// Reads a variable-length string dataset (as written here); unwritten elements read as "".
std::vector<std::string> read_strings(const File& f, const std::string& path,
                                      std::vector<uint64_t>* dims = nullptr);

// --- Attributes on any existing object ("/" is the root group) --------------
// Setting replaces an existing attribute of the same name, whatever its type; numbers are int64.

void set_attr(File& f, const std::string& obj_path, const std::string& name, const std::string& value);
void set_attr(File& f, const std::string& obj_path, const std::string& name, int64_t value);

// Names of the attributes of `obj_path`, sorted; whether one holds a string.
std::vector<std::string> attr_names(const File& f, const std::string& obj_path);
bool attr_is_string(const File& f, const std::string& obj_path, const std::string& name);
// True if object `obj_path` (which must exist) has attribute `name`.
bool has_attr(const File& f, const std::string& obj_path, const std::string& name);
// Reads a single-element variable-length string attribute.
std::string get_attr_string(const File& f, const std::string& obj_path, const std::string& name);
// Reads a single-element numeric attribute converted to int64.
int64_t get_attr_int64(const File& f, const std::string& obj_path, const std::string& name);

}  // namespace icl::io
