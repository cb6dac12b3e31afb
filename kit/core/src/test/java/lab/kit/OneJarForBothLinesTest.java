package lab.kit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

/**
 * The kit is one jar for Spring Boot 2.7 (javax servlet, Tomcat 9) and 3.x (jakarta, Tomcat 10.1): no class of it
 * may name a type that exists on one line only. The class files' constant pools are read for those names (a byte
 * search: their UTF-8 entries are plain ASCII); the it-boot2 and it-boot3 tests then run the same jar on each line.
 */
class OneJarForBothLinesTest {

    static final List<String> ONE_LINE_ONLY = List.of("javax/servlet", "jakarta/servlet",
            "org/springframework/boot/autoconfigure/web/ServerProperties", "org/slf4j/",
            "org/apache/http/", "org/apache/hc/");   // HttpClient 4 (Camel 3) and 5 (Camel 4): read by reflection

    static List<Path> classFiles() throws IOException {
        try (Stream<Path> files = Files.walk(Paths.get("target", "classes"))) {
            return files.filter(f -> f.toString().endsWith(".class")).collect(Collectors.toList());
        }
    }

    /** The names of one line only that a class file's bytes (its constant pool) hold. */
    static List<String> named(byte[] classFile) {
        String pool = new String(classFile, StandardCharsets.ISO_8859_1);
        return ONE_LINE_ONLY.stream().filter(pool::contains).collect(Collectors.toList());
    }

    @Test
    void noClassNamesATypeOfOneLineOnly() throws IOException {
        List<Path> classes = classFiles();
        assertTrue(classes.size() >= 3, "the kit's classes were not found: " + classes);
        List<String> found = new ArrayList<>();
        for (Path file : classes) {
            named(Files.readAllBytes(file)).forEach(name -> found.add(file.getFileName() + " names " + name));
        }
        assertEquals(List.of(), found);
    }

    @Test
    void theGuardSeesSuchANameInAConstantPool() {
        // a CONSTANT_Utf8 entry as javac writes it: tag 1, length, the bytes
        byte[] entry = "\u0001\u0000\u0014javax/servlet/Filter".getBytes(StandardCharsets.ISO_8859_1);
        assertEquals(List.of("javax/servlet"), named(entry));
        assertEquals(List.of(), named("\u0001\u0000\u0010java/lang/Object".getBytes(StandardCharsets.ISO_8859_1)));
    }

    @Test
    void bootFindsTheKitThroughTheAutoConfigurationImports() throws IOException {
        Path imports = Paths.get("target", "classes", "META-INF", "spring",
                "org.springframework.boot.autoconfigure.AutoConfiguration.imports");
        assertEquals(List.of("lab.kit.LabKitAutoConfiguration"), Files.readAllLines(imports));
    }
}
