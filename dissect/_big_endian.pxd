# Kafka's big-endian integers read in C, declared once for every compiled reader of the wire (a frame's size prefix,
# a message's header, a body's fields, a record batch's header). Each is the shifts of its bytes, which GCC and Clang
# compile into one load and a byte swap (a loop over the bytes was not unrolled: a record batch header's eleven
# integers took 200 instructions). No bounds check here: every caller checks its buffer's length first.

from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t


cdef inline uint16_t be_u16(const uint8_t* b) noexcept nogil:
    return <uint16_t> (b[0] << 8 | b[1])


cdef inline int16_t be_i16(const uint8_t* b) noexcept nogil:
    return <int16_t> be_u16(b)


cdef inline uint32_t be_u32(const uint8_t* b) noexcept nogil:
    return <uint32_t> b[0] << 24 | <uint32_t> b[1] << 16 | <uint32_t> b[2] << 8 | b[3]


cdef inline int32_t be_i32(const uint8_t* b) noexcept nogil:
    return <int32_t> be_u32(b)


cdef inline int64_t be_i64(const uint8_t* b) noexcept nogil:
    return <int64_t> (<uint64_t> be_u32(b) << 32 | be_u32(b + 4))
