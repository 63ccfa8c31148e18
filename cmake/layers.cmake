# layers.cmake - how a folder of src/ becomes a library whose headers only its dependents see.
#
# Every folder of src/ is one library. Its headers are included as "<folder>/<name>.h", and the
# folder is reachable only through an include root of its own in the build tree (a directory
# holding one link, <folder> -> src/<folder>). mprof_expose() gives that root to the library as a
# PUBLIC include directory, so target_link_libraries() hands it on to what links the library and
# to nothing else: a file that includes a header of a library its own library does not link
# fails to compile. The links between the libraries (src/CMakeLists.txt) are the dependency rule.
function(mprof_expose target folder)
  set(root ${PROJECT_BINARY_DIR}/include_roots/${folder})
  if(NOT IS_SYMLINK ${root}/${folder})
    file(MAKE_DIRECTORY ${root})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${folder} ${root}/${folder} SYMBOLIC)
  endif()
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${root}>)
endfunction()

# A tool-side library of the folder src/<folder>: sources, warnings, exposure. Usage:
#   mprof_layer(<folder> SOURCES a.c b.c LINKS <libraries it may use>)
function(mprof_layer folder)
  cmake_parse_arguments(L "" "" "SOURCES;LINKS" ${ARGN})
  set(t mprof_${folder})
  add_library(${t} STATIC ${L_SOURCES})
  target_compile_options(${t} PRIVATE ${MPROF_WARNINGS})
  target_include_directories(${t} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>)
  mprof_expose(${t} ${folder})
  target_link_libraries(${t} PUBLIC ${L_LINKS})
endfunction()
