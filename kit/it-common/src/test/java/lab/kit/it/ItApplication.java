package lab.kit.it;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/** A service of the kit's own: one endpoint, nothing of the lab in it; the kit comes only from the class path. */
@SpringBootApplication
@RestController
public class ItApplication {

    @GetMapping("/hello")
    public String hello() {
        return "hello";
    }

    public static void main(String[] args) {
        SpringApplication.run(ItApplication.class, args);
    }
}
