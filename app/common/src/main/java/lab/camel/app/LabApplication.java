package lab.camel.app;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;

/** The Camel Tuning Lab's customer service. The same class starts both stacks (camel3 and camel4). */
@SpringBootApplication
@EnableConfigurationProperties(LabProperties.class)
public class LabApplication {
    public static void main(String[] args) {
        SpringApplication.run(LabApplication.class, args);
    }
}
