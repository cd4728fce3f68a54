# C++ from a .proto at build time, with Debian's protoc and grpc_cpp_plugin (protobuf-compiler,
# protobuf-compiler-grpc; nothing is downloaded). gpudoctor_grpc_proto(TARGET PROTO) makes the
# static library TARGET from PROTO's messages and its gRPC service; the generated headers are
# found as "<name>.pb.h" / "<name>.grpc.pb.h" (system includes: their warnings are not ours).
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)

function(gpudoctor_grpc_proto target proto)
  get_filename_component(name ${proto} NAME_WE)
  get_filename_component(dir ${proto} DIRECTORY)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/generated/${target})
  set(files ${out}/${name}.pb.cc ${out}/${name}.pb.h ${out}/${name}.grpc.pb.cc
            ${out}/${name}.grpc.pb.h)
  add_custom_command(
    OUTPUT ${files}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${out}
    COMMAND ${Protobuf_PROTOC_EXECUTABLE} --proto_path=${dir} --cpp_out=${out} --grpc_out=${out}
            --plugin=protoc-gen-grpc=$<TARGET_FILE:gRPC::grpc_cpp_plugin> ${proto}
    DEPENDS ${proto} ${Protobuf_PROTOC_EXECUTABLE} gRPC::grpc_cpp_plugin
    COMMENT "protoc: ${name}.proto"
    VERBATIM)
  add_library(${target} STATIC ${out}/${name}.pb.cc ${out}/${name}.grpc.pb.cc)
  target_include_directories(${target} SYSTEM PUBLIC ${out})
  target_link_libraries(${target} PUBLIC gRPC::grpc++ protobuf::libprotobuf)
  # Generated code: compiled without our warning flags (-Werror included).
  target_compile_options(${target} PRIVATE -w)
endfunction()
